import MiniSearch from 'minisearch';
import { z } from 'zod';
import { answerLimits, describeLimits, type AnswerLimits } from './answer-limits.js';
import { defineTool, type AgentTool } from './tool.js';
import { definitionJson, type DeferralManager, type DeferrableTool } from '../prompt/deferral.js';

export const TOOL_SEARCH_NAME = 'tool_search';
const DEFAULT_LIMIT = 5;
const MAX_LIMIT = 20;
/** Deferred tool names listed when nothing matches. */
const SUGGESTIONS = 8;

const STOP_WORDS = new Set([
  'a',
  'an',
  'and',
  'are',
  'as',
  'at',
  'be',
  'by',
  'for',
  'from',
  'in',
  'into',
  'is',
  'it',
  'of',
  'on',
  'or',
  'that',
  'the',
  'this',
  'to',
  'with',
  'tool',
  'tools',
]);

/** Splits on anything not a letter or digit, and camelCase / PascalCase words (`repoOwner` → repo, owner). */
export function searchTerms(text: string): string[] {
  return (
    text
      .replace(/(\p{Ll}|\p{N})(\p{Lu})/gu, '$1 $2')
      // The last capital of a run before a capitalised word (`HTMLParser` → HTML Parser), looked at one capital at a time:
      // `(\p{Lu}+)(\p{Lu}\p{Ll})` retried a long run of capitals from each of them.
      .replace(/(\p{Lu})(?=\p{Lu}\p{Ll})/gu, '$1 ')
      .split(/[^\p{L}\p{N}]+/u)
      .filter((t) => t !== '')
  );
}

function processTerm(term: string): string | null {
  const t = term.toLowerCase();
  return STOP_WORDS.has(t) ? null : t;
}

/**
 * Every property name in a JSON Schema, walking nested objects, arrays, combinators and definitions. Stops at depth
 * 32 and at cycles (a schema built in memory may share or loop objects).
 */
export function parameterNames(schema: unknown): string[] {
  const out: string[] = [];
  const seen = new Set<object>();
  const walk = (node: unknown, depth: number): void => {
    if (typeof node !== 'object' || node === null || depth > 32 || seen.has(node)) return;
    seen.add(node);
    if (Array.isArray(node)) {
      for (const n of node) walk(n, depth + 1);
      return;
    }
    const s = node as Record<string, unknown>;
    for (const key of ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'] as const) {
      const props = s[key];
      if (typeof props !== 'object' || props === null || Array.isArray(props)) continue;
      for (const [name, sub] of Object.entries(props)) {
        if (key === 'properties') out.push(name);
        walk(sub, depth + 1);
      }
    }
    for (const key of [
      'items',
      'prefixItems',
      'additionalProperties',
      'additionalItems',
      'contains',
      'not',
      'if',
      'then',
      'else',
      'anyOf',
      'oneOf',
      'allOf',
    ] as const)
      walk(s[key], depth + 1);
  };
  walk(schema, 0);
  return [...new Set(out)];
}

interface Doc {
  id: number;
  name: string;
  description: string;
  parameters: string;
  server: string;
}

export interface ToolHit {
  tool: DeferrableTool;
  score: number;
}

const indexes = new WeakMap<DeferralManager, { revision: number; tools: DeferrableTool[]; index: MiniSearch<Doc> }>();

/** The search index over the manager's deferred tools, rebuilt when its revision moves. */
function indexFor(manager: DeferralManager): { tools: DeferrableTool[]; index: MiniSearch<Doc> } {
  const hit = indexes.get(manager);
  if (hit && hit.revision === manager.revision) return hit;
  const tools = manager.deferredTools();
  const index = new MiniSearch<Doc>({
    fields: ['name', 'description', 'parameters', 'server'],
    tokenize: searchTerms,
    processTerm,
    searchOptions: {
      boost: { name: 3, parameters: 1.5, server: 1.5, description: 1 },
      prefix: (term) => term.length >= 3,
      // Edits allowed per query term: a transposed pair ("tikcet") is two.
      fuzzy: (term) => (term.length >= 6 ? 2 : term.length >= 4 ? 1 : false),
      combineWith: 'OR',
    },
  });
  index.addAll(
    tools.map((t, id) => ({
      id,
      name: t.name,
      description: t.description,
      parameters: parameterNames(t.inputSchema).join(' '),
      server: t.server ?? '',
    })),
  );
  const built = { revision: manager.revision, tools, index };
  indexes.set(manager, built);
  return built;
}

/**
 * Ranks the manager's deferred tools for a query: full-text (BM25) over names (boosted), descriptions, parameter
 * names and MCP server, with prefix and fuzzy matching. A query that is exactly a deferred tool's name puts it first.
 */
export function searchDeferredTools(manager: DeferralManager, query: string, limit = DEFAULT_LIMIT): ToolHit[] {
  const { tools, index } = indexFor(manager);
  if (tools.length === 0) return [];
  const hits: ToolHit[] = index.search(query).map((r) => ({ tool: tools[r.id as number]!, score: r.score }));
  const exact = tools.find((t) => t.name.toLowerCase() === query.trim().toLowerCase());
  if (exact) {
    const rest = hits.filter((h) => h.tool !== exact);
    return [{ tool: exact, score: Math.max(hits[0]?.score ?? 0, 0) + 1 }, ...rest].slice(0, limit);
  }
  return hits.slice(0, limit);
}

const input = z.object({
  query: z
    .string()
    .trim()
    .min(1)
    .max(500)
    .describe('Keywords: what the tool does, its service, or its parameters (e.g. "create github issue").'),
  limit: z
    .number()
    .int()
    .min(1)
    .max(MAX_LIMIT)
    .default(DEFAULT_LIMIT)
    .describe(`How many tools to return (1–${MAX_LIMIT}, default ${DEFAULT_LIMIT}).`),
});

/**
 * `tool_search`: finds deferred tools by keywords, answers with their full definitions (name, description, input
 * schema as JSON) and promotes them so they can be called this turn.
 */
export function toolSearchTool(
  manager: DeferralManager,
  options: { limits?: Partial<AnswerLimits> } = {},
): AgentTool<z.output<typeof input>> {
  const limits = answerLimits(options.limits);
  return defineTool({
    name: TOOL_SEARCH_NAME,
    description:
      "Search the tools deferred to save context (see the note in the system prompt) by keywords: what the tool does, the service it belongs to, or its parameter names. Returns the matching tools' full definitions; they can be called in this turn.",
    input,
    async run({ query, limit }) {
      const deferred = manager.deferredTools();
      if (deferred.length === 0)
        return `No tools are deferred: all ${manager.tools().length} tools are already available.`;
      const hits = searchDeferredTools(manager, query, limit);
      if (hits.length === 0) return noMatch(query, deferred);
      // Whole definitions, best first, as many as fit one answer; only the tools shown are promoted.
      const defs: unknown[] = [];
      let bytes = 400 + Buffer.byteLength(query, 'utf8');
      for (const h of hits) {
        const def = definitionJson(h.tool);
        const size = Buffer.byteLength(JSON.stringify(def, null, 2), 'utf8') + 4;
        if (defs.length > 0 && (bytes + size > limits.maxBytes || (bytes + size) / 3 > limits.maxTokens)) break;
        defs.push(def);
        bytes += size;
      }
      const shownHits = hits.slice(0, defs.length);
      manager.promote(shownHits.map((h) => h.tool.name));
      const n = defs.length;
      const more = hits.length - n;
      const capped =
        more > 0
          ? `\n[answer capped at ${describeLimits(limits)}: ${more} more matching ${more === 1 ? 'tool' : 'tools'} not shown; search again with narrower keywords or a tool's name]`
          : '';
      return `${n} ${n === 1 ? 'tool matches' : 'tools match'} "${query}", best first; ${n === 1 ? 'it is' : 'they are'} available to call this turn:\n${JSON.stringify(defs, null, 2)}${capped}`;
    },
  });
}

/** A line naming a few deferred tools, spread over servers and kinds, so the model can try better keywords. */
function noMatch(query: string, deferred: readonly DeferrableTool[]): string {
  const groups = new Map<string, DeferrableTool[]>();
  for (const t of deferred) {
    const key = t.kind === 'mcp' ? `mcp:${t.server ?? ''}` : t.kind;
    let g = groups.get(key);
    if (!g) groups.set(key, (g = []));
    g.push(t);
  }
  const picks: string[] = [];
  for (let round = 0; picks.length < SUGGESTIONS && picks.length < deferred.length; round++)
    for (const g of groups.values()) {
      const t = g[round];
      if (t && picks.length < SUGGESTIONS) picks.push(t.name);
    }
  const more = deferred.length - picks.length;
  return `No deferred tool matches "${query}". Deferred tools include ${picks.join(', ')}${more > 0 ? ` and ${more} more` : ''}; try other keywords (an action, a service, a parameter name) or a tool's name.`;
}
