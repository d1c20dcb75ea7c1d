/**
 * The real Claude Code CLI as a client of what abridge writes: a transcript is put where Claude Code keeps its sessions
 * (`<HOME>/.claude/projects/<project dir, every non-alphanumeric character as ->/<sessionId>.jsonl`) in a temporary
 * HOME, `claude -p --resume <sessionId>` runs against a loopback server that speaks the Anthropic Messages wire format,
 * and the requests it sends are captured. The binary comes from `scripts/install-claude-code.sh` (found through
 * $ABRIDGE_CLAUDE_BIN, which `.ci/run` exports); without it the tests that need it skip and say why.
 */
import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLoopback, type Loopback, type LoopbackRequest } from './loopback.js';

/** The Claude Code version the project installs and tests against. */
export const CLAUDE_CODE_VERSION = '2.1.330';

/** The CLI binary from $ABRIDGE_CLAUDE_BIN, or why there is none (for a skip message). */
export function claudeBinary(): { bin: string } | { reason: string } {
  const bin = process.env.ABRIDGE_CLAUDE_BIN;
  if (!bin)
    return {
      reason:
        'ABRIDGE_CLAUDE_BIN is not set (run scripts/install-claude-code.sh and export what it prints; .ci/run does)',
    };
  try {
    accessSync(bin, constants.X_OK);
  } catch {
    return { reason: `ABRIDGE_CLAUDE_BIN=${bin} is not an executable file (run scripts/install-claude-code.sh)` };
  }
  return { bin };
}

export type CapturedRequest = LoopbackRequest;

/** One text block of the reply the stub streams back. */
const REPLY_TEXT = 'ok';

/**
 * A loopback Anthropic endpoint: `POST /v1/messages` answers a minimal valid message (an SSE stream when the request
 * asks for one), `count_tokens` a count, anything else `{}`. Every request is recorded.
 */
async function startAnthropicStub(): Promise<Loopback> {
  return startLoopback((req) => {
    const b = (typeof req.body === 'object' && req.body !== null ? req.body : {}) as Record<string, unknown>;
    if (req.method !== 'POST' || !req.url.startsWith('/v1/messages')) return { json: {} };
    if (req.url.includes('count_tokens')) return { json: { input_tokens: 1 } };
    const model = typeof b.model === 'string' ? b.model : 'claude-sonnet-4-5';
    const usage = { input_tokens: 1, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
    const message = {
      id: 'msg_loopback',
      type: 'message',
      role: 'assistant',
      model,
      content: [] as unknown[],
      stop_reason: null as string | null,
      stop_sequence: null,
      usage,
    };
    if (b.stream !== true)
      return { json: { ...message, content: [{ type: 'text', text: REPLY_TEXT }], stop_reason: 'end_turn' } };
    const event = (type: string, data: Record<string, unknown>) =>
      `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
    return {
      sse: [
        event('message_start', { message }),
        event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
        event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: REPLY_TEXT } }),
        event('content_block_stop', { index: 0 }),
        event('message_delta', {
          delta: { stop_reason: 'end_turn', stop_sequence: null },
          usage: { output_tokens: 1 },
        }),
        event('message_stop', {}),
      ].join(''),
    };
  });
}

/** Claude Code's folder name for a project directory. */
export function claudeProjectFolder(projectDir: string): string {
  return projectDir.replace(/[^a-zA-Z0-9]/g, '-');
}

export interface ResumeRun {
  code: number | null;
  stdout: string;
  stderr: string;
  requests: CapturedRequest[];
  /** The request that carried the resumed conversation and the prompt, when there was one. */
  main?: { model: string; messages: unknown[] };
}

/**
 * Writes `transcript` as session `sessionId` of a fresh project in a temporary HOME and runs
 * `claude -p --resume <sessionId> <prompt>` there against a loopback Anthropic endpoint. Offline and quick: telemetry,
 * error reporting, the update check and every non-essential request are switched off, one turn at most, a fixed model.
 */
export async function resumeWithClaudeCode(
  bin: string,
  transcript: string,
  sessionId: string,
  prompt: string,
  model = 'claude-opus-4-6',
): Promise<ResumeRun> {
  const root = await mkdtemp(join(tmpdir(), 'abridge-claude-'));
  const stub = await startAnthropicStub();
  try {
    const home = join(root, 'home');
    const project = join(root, 'project');
    const folder = join(home, '.claude', 'projects', claudeProjectFolder(project));
    await mkdir(project, { recursive: true });
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, `${sessionId}.jsonl`), transcript);
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: home,
      ANTHROPIC_BASE_URL: stub.baseURL,
      ANTHROPIC_API_KEY: 'sk-ant-test',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
      DISABLE_AUTOUPDATER: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_NON_ESSENTIAL_MODEL_CALLS: '1',
    };
    const args = ['-p', '--resume', sessionId, '--max-turns', '1', '--model', model, prompt];
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>(
      (resolve) => {
        const child = execFile(
          bin,
          args,
          { cwd: project, env, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 },
          (err, out, errOut) => {
            const c = err
              ? typeof (err as { code?: unknown }).code === 'number'
                ? (err as { code: number }).code
                : null
              : 0;
            resolve({ code: c, stdout: String(out), stderr: String(errOut) });
          },
        );
        // With stdin open and no terminal, `claude -p` waits 3 s for piped input first.
        child.stdin?.end();
      },
    );
    const run: ResumeRun = { code, stdout, stderr, requests: stub.requests };
    const main = mainRequest(stub.requests, prompt);
    if (main) run.main = main;
    return run;
  } finally {
    await stub.close();
    await rm(root, { recursive: true, force: true });
  }
}

/**
 * The conversation request among what the CLI sent (it may first send others: a quota probe, a title): the largest
 * `POST /v1/messages` whose last message carries the prompt.
 */
function mainRequest(
  requests: readonly CapturedRequest[],
  prompt: string,
): { model: string; messages: unknown[] } | undefined {
  let best: { model: string; messages: unknown[] } | undefined;
  for (const r of requests) {
    if (r.method !== 'POST' || !r.url.startsWith('/v1/messages') || r.url.includes('count_tokens')) continue;
    const b = r.body as { model?: unknown; messages?: unknown };
    if (!Array.isArray(b?.messages) || b.messages.length === 0) continue;
    const last = b.messages[b.messages.length - 1] as { content?: unknown };
    const blocks = Array.isArray(last.content) ? last.content : [{ type: 'text', text: last.content }];
    if (!blocks.some((x: { type?: unknown; text?: unknown }) => x?.type === 'text' && x.text === prompt)) continue;
    if (!best || b.messages.length > best.messages.length) best = { model: String(b.model), messages: b.messages };
  }
  return best;
}
