import type { Message, Part } from '../model/types.js';
import type { TokenCounter } from '../tokens/counter.js';

/** What one tool costs in a context: how many calls and results are in it, and their tokens (counter units). */
export interface ToolCost {
  calls: number;
  results: number;
  /** Tokens of the tool's results. */
  tokens: number;
  /** Tokens of the calls (name and arguments) the assistant made to it. */
  callTokens: number;
}

/** The tools of an MCP server together, and which of its tools they are. */
export interface McpServerCost extends ToolCost {
  tools: string[];
}

/**
 * The MCP server a tool belongs to, from its name (or, for harnesses that route every MCP call through one tool, its
 * arguments). Claude Code and Codex name MCP tools `mcp__<server>__<tool>`; some harnesses use `mcp_<server>_<tool>`
 * (less precise: a server name with `_` cannot be told apart); Cline and Roo call `use_mcp_tool` /
 * `access_mcp_resource` with `server_name` in the arguments.
 */
/**
 * `mcp__<server>__<tool>`: the server, as `/^mcp__(.+?)__(.+)$/` reads it (the first `__` after at least one character,
 * something after it, no line break anywhere), without that expression's retries on a name with a line break.
 */
function doubleUnderscored(name: string): string | undefined {
  if (!name.startsWith('mcp__') || /[\n\r\u2028\u2029]/.test(name)) return undefined;
  const at = name.indexOf('__', 6);
  return at !== -1 && at + 2 < name.length ? name.slice(5, at) : undefined;
}

export function mcpServerOf(toolName: string, args?: unknown): string | undefined {
  const double = doubleUnderscored(toolName);
  if (double) return double;
  if ((toolName === 'use_mcp_tool' || toolName === 'access_mcp_resource') && args && typeof args === 'object') {
    const server = (args as { server_name?: unknown }).server_name;
    if (typeof server === 'string' && server !== '') return server;
  }
  const single = /^mcp_([^_]+)_(.+)$/.exec(toolName);
  if (single) return single[1];
  return undefined;
}

/** The tool name shown for a call: MCP proxies (`use_mcp_tool`) are shown as `mcp__server__tool`. */
export function displayToolName(name: string, args?: unknown): string {
  if ((name === 'use_mcp_tool' || name === 'access_mcp_resource') && args && typeof args === 'object') {
    const a = args as { server_name?: unknown; tool_name?: unknown; uri?: unknown };
    if (typeof a.server_name === 'string')
      return `mcp__${a.server_name}__${typeof a.tool_name === 'string' ? a.tool_name : name}`;
  }
  return name;
}

const UNKNOWN_TOOL = '(unknown tool)';

/**
 * Adds up, over the messages of a context in order, what each tool costs. Results name their tool when the format says
 * so; otherwise they are matched to their call by id (Claude Code and Codex results carry only the call id).
 */
export class ToolAttribution {
  private readonly byTool = new Map<string, ToolCost>();
  private readonly callNames = new Map<string, string>();

  constructor(private readonly counter: TokenCounter) {}

  /** Remembers call names without counting (calls seen before the context that is measured, e.g. archived ones). */
  learn(message: Message): void {
    for (const p of message.parts)
      if (p.type === 'tool-call') this.callNames.set(p.id, displayToolName(p.name, p.arguments));
  }

  /** The tool a part is attributed to, if any (tool calls and tool results). */
  toolOf(part: Part): string | undefined {
    if (part.type === 'tool-call') return displayToolName(part.name, part.arguments);
    if (part.type === 'tool-result') return this.callNames.get(part.callId) ?? part.toolName ?? UNKNOWN_TOOL;
    return undefined;
  }

  add(message: Message): void {
    this.learn(message);
    for (const p of message.parts) {
      const name = this.toolOf(p);
      if (name === undefined) continue;
      const cost = this.costOf(name);
      if (p.type === 'tool-call') {
        cost.calls++;
        cost.callTokens += this.counter.part(p);
      } else {
        cost.results++;
        cost.tokens += this.counter.part(p);
      }
    }
  }

  private costOf(name: string): ToolCost {
    let c = this.byTool.get(name);
    if (!c) {
      c = { calls: 0, results: 0, tokens: 0, callTokens: 0 };
      this.byTool.set(name, c);
    }
    return c;
  }

  /** Per tool, largest result tokens first. */
  tools(): Record<string, ToolCost> {
    return sortedRecord(this.byTool);
  }

  /** Per MCP server (tools that belong to none are left out), largest result tokens first. */
  mcpServers(): Record<string, McpServerCost> {
    const out = new Map<string, McpServerCost>();
    for (const [name, c] of this.byTool) {
      const server = mcpServerOf(name);
      if (server === undefined) continue;
      const s = out.get(server) ?? { calls: 0, results: 0, tokens: 0, callTokens: 0, tools: [] };
      s.calls += c.calls;
      s.results += c.results;
      s.tokens += c.tokens;
      s.callTokens += c.callTokens;
      s.tools.push(name);
      out.set(server, s);
    }
    return sortedRecord(out);
  }
}

/**
 * A record keyed by names from a transcript: without a prototype, so that a tool called `__proto__` or `constructor`
 * is a key like any other (on a plain object, `out.__proto__ = v` would set the prototype and the tool would vanish).
 */
export function nameRecord<T>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}

function sortedRecord<T extends ToolCost>(m: Map<string, T>): Record<string, T> {
  const out = nameRecord<T>();
  for (const [k, v] of [...m].sort(
    (a, b) => b[1].tokens + b[1].callTokens - (a[1].tokens + a[1].callTokens) || a[0].localeCompare(b[0]),
  ))
    out[k] = v;
  return out;
}

/** Scales counted tokens to provider tokens (the snapshot's ratio), keeping counts as they are. */
export function scaleCosts<T extends ToolCost>(costs: Record<string, T>, ratio: number): Record<string, T> {
  const out = nameRecord<T>();
  for (const [k, v] of Object.entries(costs))
    out[k] = { ...v, tokens: Math.round(v.tokens * ratio), callTokens: Math.round(v.callTokens * ratio) };
  return out;
}
