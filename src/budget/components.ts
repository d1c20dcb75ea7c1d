import type { Entry, Message, Session } from '../model/types.js';
import type { TokenCounter } from '../tokens/counter.js';
import { argumentsText } from '../model/parts.js';
import type { ComponentId } from './types.js';
import { viewOf } from '../model/view.js';
import { walkUndos } from '../model/undo.js';
import { ToolAttribution, type McpServerCost, type ToolCost } from './attribution.js';

/** Which component a message of the conversation belongs to (before the current prompt is singled out). */
export function componentOf(message: Message): ComponentId {
  if (message.parts.some((p) => p.type === 'compaction')) return 'summary';
  if (message.role === 'system') return 'system';
  if (message.role === 'tool') {
    const r = message.parts.find((p) => p.type === 'tool-result');
    if (r?.type === 'tool-result' && r.toolName && /skill/i.test(r.toolName)) return 'skills';
    return 'recent';
  }
  if (message.role === 'user' && message.synthetic) {
    if (isProjectMemory(message)) return 'memory';
    const text = message.parts.map((p) => (p.type === 'text' ? p.text : '')).join('\n');
    if (/<skill|skill(s)? (are )?available|SKILL\.md/i.test(text.slice(0, 2000))) return 'skills';
  }
  return 'recent';
}

/**
 * Project memory a harness recorded as a user message, by the block it opens with: Codex's `# AGENTS.md instructions
 * for …` (earlier `<user_instructions>`), Claude Code's claudeMd reminder, an extension's `# CLAUDE.md`. A message that
 * merely mentions such a file (a listing that shows AGENTS.md) is not memory.
 */
export function isProjectMemory(message: Message): boolean {
  return memoryFile(message) !== undefined;
}

/** The opening line of project memory (`# AGENTS.md instructions for /repo`), which names its file; else undefined. */
export function memoryFile(message: Message): string | undefined {
  if (message.role !== 'user' || !message.synthetic) return undefined;
  const first = message.parts.find((p) => p.type === 'text');
  if (first?.type !== 'text' || !MEMORY_BLOCK.test(first.text.slice(0, 400))) return undefined;
  return first.text.trimStart().split('\n', 1)[0] ?? '';
}

const MEMORY_BLOCK =
  /^\s*(?:#\s*(?:AGENTS|CLAUDE)\.md\b|<user_instructions>|<system-reminder>[\s\S]{0,300}#\s*claudeMd\b)/i;

export interface ContextMeasure {
  /** Counted tokens (the counter's units) per component. */
  byComponent: Record<ComponentId, number>;
  /** Tool definitions by kind, when the session carries them (API request bodies). */
  tools: { builtIn: number; mcp: number; deferred: number };
  messages: number;
  toolResults: number;
  /** Compactions in view: an undo's checkpoint is none, and those it took back are no longer. */
  compactions: number;
  total: number;
  /** What each tool's calls and results in the view cost (counted tokens), largest first. */
  byTool: Record<string, ToolCost>;
  /** The same per MCP server (tools named `mcp__<server>__<tool>` and similar). */
  byMcpServer: Record<string, McpServerCost>;
}

function emptyComponents(): Record<ComponentId, number> {
  return {
    system: 0,
    memory: 0,
    skills: 0,
    tools: 0,
    knowledgeBase: 0,
    crossIssue: 0,
    summary: 0,
    recent: 0,
    prompt: 0,
  };
}

/**
 * Measures what the model sees at the end of `entries` (an active branch, possibly cut at some entry) — its view
 * after the last compaction, with that compaction's summary, edits and archived span — split into components.
 */
export function measureContext(session: Session, entries: readonly Entry[], counter: TokenCounter): ContextMeasure {
  const view = viewOf(entries);
  // A store's log keeps every compaction an undo took back, and the undo's own checkpoint, on the branch.
  const compactions = walkUndos(entries).inView.length;
  // The current prompt: the last thing a person typed.
  let promptAt = -1;
  for (let i = view.length - 1; i >= 0; i--) {
    const m = view[i]!.message;
    if (m.role === 'user' && !m.synthetic && m.parts.some((p) => p.type === 'text' && p.text.trim() !== '')) {
      promptAt = i;
      break;
    }
  }
  const byComponent = emptyComponents();
  let toolResults = 0;
  const attribution = new ToolAttribution(counter);
  // Calls archived by a compaction still name the results kept in view.
  for (const e of entries) if (e.message) attribution.learn(e.message);
  view.forEach((item, i) => {
    const m = item.message;
    byComponent[i === promptAt ? 'prompt' : componentOf(m)] += counter.message(m);
    toolResults += m.parts.filter((p) => p.type === 'tool-result').length;
    attribution.add(m);
  });
  const tools = toolDefinitions(session, counter);
  byComponent.tools += tools.builtIn + tools.mcp;
  const total = Object.values(byComponent).reduce((a, b) => a + b, 0);
  return {
    byComponent,
    tools,
    messages: view.length,
    toolResults,
    compactions,
    total,
    byTool: attribution.tools(),
    byMcpServer: attribution.mcpServers(),
  };
}

/** Tool definitions a request body carries, split into built-in and MCP (by the `mcp__`/`mcp_` naming convention). */
function toolDefinitions(session: Session, counter: TokenCounter): ContextMeasure['tools'] {
  const request = session.extra?.request as { tools?: unknown } | undefined;
  const out = { builtIn: 0, mcp: 0, deferred: 0 };
  if (!request || !Array.isArray(request.tools)) return out;
  for (const t of request.tools) {
    const def = t as { name?: unknown; function?: { name?: unknown }; defer_loading?: unknown };
    const name = String(def.name ?? def.function?.name ?? '');
    const tokens = counter.text(argumentsText(t));
    // Deferred tools (Anthropic `defer_loading`) are not in the prompt until searched for.
    if (def.defer_loading === true) out.deferred += tokens;
    else if (/^mcp(__|_)/.test(name)) out.mcp += tokens;
    else out.builtIn += tokens;
  }
  return out;
}
