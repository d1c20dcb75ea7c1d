import { AbridgeError } from '../errors.js';
import { FORMAT_IDS, type FormatId } from '../model/types.js';
import type { TranscriptFormat, UnsupportedFormat } from './format.js';
import { piFormat } from './pi.js';
import { claudeCodeFormat } from './claude-code.js';
import { codexFormat } from './codex.js';
import { sweAgentFormat } from './swe-agent.js';
import { anthropicFormat } from './anthropic.js';
import { openaiChatFormat } from './openai-chat.js';
import { openaiResponsesFormat } from './openai-responses.js';
import { aiSdkFormat } from './ai-sdk.js';
import { copilotCliFormat } from './copilot-cli.js';
import { openHandsFormat } from './openhands.js';
import { geminiCliFormat } from './gemini-cli.js';
import { opencodeFormat } from './opencode.js';
import { qwenCodeFormat } from './qwen-code.js';
import { deepSeekHarnessFormat } from './deepseek-harness.js';
import { aiderFormat } from './aider.js';
import { droidFormat } from './droid.js';
import { cursorFormat } from './cursor.js';
import { kiroFormat } from './kiro.js';
import { kimiCliFormat } from './kimi-cli.js';
import { grokBuildFormat } from './grok-build.js';
import { unsupportedFormats } from './unsupported.js';

/** The formats as values, one per FormatId; frozen: a new format is a new file here, not a registration at run time. */
export const formats: readonly TranscriptFormat[] = Object.freeze([
  piFormat,
  claudeCodeFormat,
  codexFormat,
  sweAgentFormat,
  anthropicFormat,
  openaiChatFormat,
  openaiResponsesFormat,
  aiSdkFormat,
  copilotCliFormat,
  openHandsFormat,
  geminiCliFormat,
  opencodeFormat,
  qwenCodeFormat,
  deepSeekHarnessFormat,
  aiderFormat,
  droidFormat,
  cursorFormat,
  kiroFormat,
  kimiCliFormat,
  grokBuildFormat,
]);

export const recognizedButUnsupported: readonly UnsupportedFormat[] = unsupportedFormats;

export function getFormat(id: string): TranscriptFormat {
  const f = formats.find((x) => x.id === id);
  if (!f) {
    throw new AbridgeError('UNKNOWN_FORMAT_ID', `unknown format "${id}"; expected one of: ${FORMAT_IDS.join(', ')}`);
  }
  return f;
}

export function isFormatId(id: string): id is FormatId {
  return (FORMAT_IDS as readonly string[]).includes(id);
}
