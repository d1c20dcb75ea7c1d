/**
 * `abridge-context/openai-agents`: abridge inside the OpenAI Agents SDK for JS (`@openai/agents`).
 *
 * ```ts
 * const session = new AbridgeSession(new ContextManager({ model: 'gpt-5', provider: 'openai-responses' }));
 * const agent = new Agent({ name: 'coder', instructions, tools, model: session.model('gpt-5') });
 * await run(agent, 'Fix the failing test.', { session, maxTurns: 50 });
 * ```
 *
 * Two hooks, because the SDK has two: the runner reads a `Session` once, when a run starts (`getItems`), and writes it
 * when the run ends (`addItems`); between the two, the model calls of the run (one per tool round) are sent from the
 * runner's own list of items, which only grows. So the session alone decides what a run starts from, and the model
 * wrapper (`session.model(...)`) is what hands each request abridge's compacted view: it adds what is new in the
 * request's items to the manager, compacts when the window calls for it (not at every request: the manager keeps its
 * state, anchored on the provider's last bill), sends the view with the system prompt and the reserve it counted as
 * `maxTokens`, records the answer with the usage the provider billed, and retries once after an overflow refusal.
 *
 * History rule (as for the AI SDK middleware): a request's items are expected to continue those of the request before
 * (the runner appends the answer and the tool results), or to start with the view the session gave (`getItems`, the
 * next run); any other list is re-synced — what follows the longest common prefix is added — and `onEvent` says so.
 * The manager never forgets: `popItem` and `clearSession` are refused (the store is append-only; start a new session).
 *
 * Items abridge reads: user, system and assistant messages, reasoning, function calls and their results. Other items
 * (hosted tool calls, computer, shell and apply-patch calls, tool search) are kept as they came, counted as their
 * JSON, and sent back untouched while compaction leaves them; compaction does not pair a computer, shell or
 * apply-patch call with its result.
 *
 * `@openai/agents` is an optional peer: its types are imported as types only, and it is loaded (`import()`) only to
 * resolve a model given by name and to build abridge's own tools.
 */
import type {
  AgentInputItem,
  FunctionTool,
  Model,
  ModelRequest,
  ModelResponse,
  Session,
  StreamEvent,
} from '@openai/agents';
import { imageFromUrl, prepareConversation } from '../formats/request-body.js';
import { contextOverflow } from '../formats/wire.js';
import type { ContextManager, ManagedTool, PreparedTurn } from '../manager/context-manager.js';
import { renderPrompt } from '../manager/request.js';
import { parseArguments, textPart } from '../model/parts.js';
import type { Message, Part, ResultContentPart, ToolResultPart, Usage } from '../model/types.js';
import { activeMessages } from '../model/view.js';
import { AbridgeError } from '../errors.js';
import { importSdk } from './missing-sdk.js';
import { hostRequestReport, type HostEvent, type HostRequestReport } from '../manager/host-report.js';

// ---------------------------------------------------------------------------------------------------------------------
// Public types

/**
 * One model request as the wrapped model saw it (after the response, or after a refusal that was not recovered); the
 * bill is input + cached tokens.
 */
export type OpenAIAgentsRequestReport = HostRequestReport;

export type OpenAIAgentsEvent =
  | HostEvent
  /**
   * abridge's own tools are counted in every request (the manager offers them) but the agent does not define them:
   * add `await session.tools()` to the agent's tools, or create the manager with `agentTools: false`. Once per name.
   */
  | { type: 'tools-not-offered'; names: string[] };

export interface AbridgeSessionOptions {
  /** Called once per model request, with abridge's prediction and the provider's bill. */
  onRequest?: (report: OpenAIAgentsRequestReport) => void;
  /** Re-syncs, overflow retries, tool-definition mismatches (also: the manager's own events on `cm`). */
  onEvent?: (event: OpenAIAgentsEvent) => void;
}

// ---------------------------------------------------------------------------------------------------------------------
// Items ⇄ messages

type Item = AgentInputItem;
type Loose = Record<string, unknown>;

/**
 * An item's identity for history comparison: what it says, not the ids, statuses and provider data the runner or the
 * API may add or strip between two requests (reasoning ids by policy, `status` on a call it re-creates).
 */
function fingerprint(item: unknown): string {
  return (
    JSON.stringify(item, (key, value: unknown) =>
      key === 'id' || key === 'status' || key === 'providerData' ? undefined : value,
    ) ?? ''
  );
}

/** The parts an item was read into, and the item itself for the parts that go back as they came. */
class Originals {
  private readonly parts = new WeakMap<object, Item>();
  private readonly partsOf = new WeakMap<object, Part[]>();
  private readonly calls = new Map<string, { args: unknown; item: Item }>();
  private readonly results = new Map<string, { content: ResultContentPart[]; item: Item }>();

  remember(parts: readonly Part[], item: Item): void {
    this.partsOf.set(item, [...parts]);
    for (const part of parts) {
      if (part.type === 'tool-call') this.calls.set(part.id, { args: part.arguments, item });
      else if (part.type === 'tool-result') this.results.set(part.callId, { content: part.content, item });
      else this.parts.set(part, item);
    }
  }

  /** The item a part was read from, while the part is the one read (tool parts: while they hold the same values). */
  original(part: Part): Item | undefined {
    if (part.type === 'tool-call') {
      const c = this.calls.get(part.id);
      return c && c.args === part.arguments ? c.item : undefined;
    }
    if (part.type === 'tool-result') {
      const r = this.results.get(part.callId);
      return r && r.content === part.content ? r.item : undefined;
    }
    return this.parts.get(part);
  }

  /** The item of a part, when every part read from that item is among `present` (so the item says nothing else). */
  whole(part: Part, present: readonly Part[]): Item | undefined {
    const item = this.original(part);
    if (!item) return undefined;
    const parts = this.partsOf.get(item) ?? [];
    return parts.every((p) => present.includes(p) || (p.type !== 'text' && this.original(p) === item))
      ? item
      : undefined;
  }
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((c: Loose) =>
      typeof c.text === 'string'
        ? c.text
        : typeof c.refusal === 'string'
          ? c.refusal
          : typeof c.transcript === 'string'
            ? c.transcript
            : '',
    )
    .filter((t) => t !== '')
    .join('\n');
}

/** A user content part (`input_text`, `input_image`, `input_file`, `audio`) as abridge parts. */
function userPart(c: Loose): Part {
  if (c.type === 'input_image' || c.type === 'image') {
    const image = c.image;
    if (typeof image === 'string') return imageFromUrl(image);
    if (image && typeof image === 'object' && typeof (image as Loose).id === 'string')
      return { type: 'image', url: `file-id:${(image as Loose).id as string}` };
  }
  if (c.type === 'input_file' || c.type === 'file') {
    const file = c.file;
    const name = typeof c.filename === 'string' ? c.filename : undefined;
    const p: Part = { type: 'file' };
    if (name) p.name = name;
    if (typeof file === 'string') {
      const img = file.startsWith('data:') ? imageFromUrl(file) : undefined;
      if (img?.data) {
        p.data = img.data;
        if (img.mediaType) p.mediaType = img.mediaType;
      } else p.url = file;
    } else if (file && typeof file === 'object') {
      const f = file as Loose;
      if (typeof f.url === 'string') p.url = f.url;
      else if (typeof f.id === 'string') p.url = `file-id:${f.id}`;
    }
    return p;
  }
  return textPart(typeof c.text === 'string' ? c.text : typeof c.transcript === 'string' ? c.transcript : '');
}

function resultContent(output: unknown): ResultContentPart[] {
  if (typeof output === 'string') return [textPart(output)];
  const list = Array.isArray(output) ? output : output && typeof output === 'object' ? [output] : [];
  const out: ResultContentPart[] = [];
  for (const c of list as Loose[]) {
    const p = userPart(c);
    if (p.type === 'text' || p.type === 'image' || p.type === 'file') out.push(p);
  }
  return out.length ? out : [textPart('')];
}

type Side = 'user' | 'system' | 'assistant' | 'tool';

/** One item as the part it is read into, and which side of the conversation it is on. */
function readItem(item: Item): { side: Side; parts: Part[] } {
  const it = item as Loose;
  const type = it.type ?? 'message';
  if (type === 'message' && (it.role === 'user' || it.role === 'system' || it.role === 'assistant')) {
    if (it.role === 'system') return { side: 'system', parts: [textPart(textOf(it.content))] };
    if (it.role === 'assistant') return { side: 'assistant', parts: [textPart(textOf(it.content))] };
    const content = it.content;
    return {
      side: 'user',
      parts: typeof content === 'string' ? [textPart(content)] : ((content as Loose[]) ?? []).map(userPart),
    };
  }
  if (type === 'reasoning') {
    const raw = textOf(it.rawContent);
    return { side: 'assistant', parts: [{ type: 'thinking', text: raw || textOf(it.content) }] };
  }
  if (type === 'function_call')
    return {
      side: 'assistant',
      parts: [
        {
          type: 'tool-call',
          id: String(it.callId),
          name: String(it.name),
          arguments: parseArguments(it.arguments),
        },
      ],
    };
  if (type === 'function_call_result')
    return {
      side: 'tool',
      parts: [
        {
          type: 'tool-result',
          callId: String(it.callId),
          toolName: String(it.name),
          content: resultContent(it.output),
          isError: false,
        },
      ],
    };
  // What abridge does not read: counted as its JSON, sent back as it came while compaction leaves it.
  const answers = /_(result|output)$/.test(String(type));
  return { side: answers ? 'user' : 'assistant', parts: [textPart(JSON.stringify(item))] };
}

/** Items as messages (consecutive items of one side make one message), each part remembering its item. */
function readItems(items: readonly Item[], originals: Originals): Message[] {
  const out: Message[] = [];
  for (const item of items) {
    const { side, parts } = readItem(item);
    originals.remember(parts, item);
    const role = side === 'tool' ? 'tool' : side;
    const last = out[out.length - 1];
    // A user message stays one message; the model's items and the results of one round each make one.
    if (last && last.role === role && role !== 'user' && role !== 'system') last.parts.push(...parts);
    else out.push({ role, parts });
  }
  return out;
}

function callItem(p: Extract<Part, { type: 'tool-call' }>): Item {
  return {
    type: 'function_call',
    callId: p.id,
    name: p.name,
    arguments: typeof p.arguments === 'string' ? p.arguments : JSON.stringify(p.arguments ?? {}),
    status: 'completed',
  } as Item;
}

function userContent(p: Part): Loose | undefined {
  switch (p.type) {
    case 'text':
      return p.text.trim() === '' ? undefined : { type: 'input_text', text: p.text };
    case 'compaction':
      return { type: 'input_text', text: p.marker.summary };
    case 'thinking':
      return p.text.trim() === '' ? undefined : { type: 'input_text', text: p.text };
    case 'tool-call':
      return { type: 'input_text', text: `[tool call ${p.name} ${JSON.stringify(p.arguments)}]` };
    case 'image':
      if (p.data) return { type: 'input_image', image: `data:${p.mediaType ?? 'image/png'};base64,${p.data}` };
      if (p.url && !p.url.startsWith('file-id:')) return { type: 'input_image', image: p.url };
      if (p.url) return { type: 'input_image', image: { id: p.url.slice('file-id:'.length) } };
      return { type: 'input_text', text: '[image not included]' };
    case 'file': {
      const out: Loose = { type: 'input_file' };
      if (p.data) out.file = `data:${p.mediaType ?? 'application/octet-stream'};base64,${p.data}`;
      else if (p.url?.startsWith('file-id:')) out.file = { id: p.url.slice('file-id:'.length) };
      else if (p.url) out.file = { url: p.url };
      else return { type: 'input_text', text: `[file${p.name ? ` ${p.name}` : ''} not included]` };
      if (p.name) out.filename = p.name;
      return out;
    }
    default:
      return undefined;
  }
}

function resultItem(p: ToolResultPart, name: string): Item {
  const texts = p.content.every((c) => c.type === 'text');
  const output = texts
    ? { type: 'text', text: p.content.map((c) => (c as { text: string }).text).join('\n') }
    : p.content.map((c) => userContent(c)).filter((c): c is Loose => c !== undefined);
  return { type: 'function_call_result', callId: p.callId, name, status: 'completed', output } as Item;
}

/**
 * Messages (the compacted view) as items: calls and results paired as the API requires (`prepareConversation`), each
 * item whose parts compaction left untouched going back as it came (ids, provider data and all). System messages are
 * returned apart: they join the instructions.
 */
function writeItems(messages: readonly Message[], originals: Originals): { system: string[]; items: Item[] } {
  const conv = prepareConversation(messages, {
    // Reasoning goes back only as the item the API produced.
    keep: (p) => p.type !== 'thinking' || originals.original(p) !== undefined,
  });
  const items: Item[] = [];
  const sent = new Set<Item>();
  const names = new Map<string, string>();
  for (const t of conv.turns) {
    const content: Loose[] = [];
    let text: string[] = [];
    const flush = () => {
      if (content.length) items.push({ role: 'user', content: content.splice(0) } as unknown as Item);
      if (text.length)
        items.push({
          type: 'message',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: text.join('\n\n') }],
        } as Item);
      text = [];
    };
    for (const p of t.parts) {
      if (p.type === 'tool-call') names.set(p.id, p.name);
      const original = originals.whole(p, t.parts);
      if (original) {
        if (sent.has(original)) continue;
        flush();
        sent.add(original);
        items.push(original);
      } else if (t.role === 'user') {
        const c = userContent(p);
        if (c) content.push(c);
      } else if (t.role === 'assistant') {
        if (p.type === 'tool-call') {
          flush();
          items.push(callItem(p));
        } else if (p.type === 'text' && p.text.trim() !== '') text.push(p.text);
        else if (p.type === 'compaction') text.push(p.marker.summary);
      } else if (p.type === 'tool-result') {
        flush();
        items.push(resultItem(p, p.toolName ?? names.get(p.callId) ?? 'unknown_tool'));
      }
    }
    flush();
  }
  return { system: conv.system, items };
}

// ---------------------------------------------------------------------------------------------------------------------
// Usage

function sumDetail(details: unknown, key: string): number {
  const list = Array.isArray(details) ? details : details && typeof details === 'object' ? [details] : [];
  let n = 0;
  for (const d of list as Loose[]) if (typeof d[key] === 'number') n += d[key] as number;
  return n;
}

/** The SDK's usage of one response (`inputTokens` counts cached tokens too, as the Responses API does). */
function usageOf(u: unknown): Usage | undefined {
  if (!u || typeof u !== 'object') return undefined;
  const x = u as Loose;
  const input = typeof x.inputTokens === 'number' ? x.inputTokens : undefined;
  if (input === undefined || input <= 0) return undefined;
  const cached = Math.min(input, sumDetail(x.inputTokensDetails, 'cached_tokens'));
  const usage: Usage = {
    input: input - cached,
    output: typeof x.outputTokens === 'number' ? x.outputTokens : 0,
    cacheRead: cached,
    cacheWrite: 0,
  };
  const reasoning = sumDetail(x.outputTokensDetails, 'reasoning_tokens');
  if (reasoning) usage.reasoning = reasoning;
  return usage;
}

// ---------------------------------------------------------------------------------------------------------------------
// The session

/** The system prompt as the manager builds it (its sections, the deferral note), as it is counted. */
function systemOf(cm: ContextManager): string {
  const built = renderPrompt(cm.provider, { model: cm.currentModel, prompt: cm.prompt, tools: [] });
  return [built.system, ...built.tail.map((b) => b.text)].filter((t) => t.trim() !== '').join('\n\n');
}

function toolsOf(request: ModelRequest, own: ReadonlySet<string>): ManagedTool[] {
  const tools: ManagedTool[] = [];
  for (const t of request.tools as unknown as Loose[]) {
    const name = String(t.name);
    if (own.has(name)) continue;
    if (t.type === 'function')
      tools.push({
        name,
        ...(typeof t.description === 'string' ? { description: t.description } : {}),
        inputSchema: (t.parameters as Record<string, unknown>) ?? { type: 'object' },
      });
    else
      tools.push({
        name,
        description: `provider tool ${String(t.type)}`,
        inputSchema: { type: 'object', 'x-args': t },
      });
  }
  for (const h of request.handoffs as unknown as Loose[])
    tools.push({
      name: String(h.toolName),
      description: String(h.toolDescription ?? ''),
      inputSchema: (h.inputJsonSchema as Record<string, unknown>) ?? { type: 'object' },
    });
  return tools;
}

/**
 * An OpenAI Agents SDK `Session` kept by a ContextManager (and so in its SessionStore), with `model()`, the model
 * wrapper that makes each request of a run send the manager's compacted view. One session per conversation; give the
 * same session to every `run` of it. Resume a stored conversation with
 * `new AbridgeSession(await ContextManager.resume(store, id, options))`.
 *
 * Errors: `ContextOverflowError` (code `CONTEXT_OVERFLOW`) when nothing can make a request fit window − max output
 * (nothing is sent); a provider's overflow refusal is recovered once (compaction, then one retry) and rethrown when that
 * fails — `contextOverflow(err)` recognizes it. A request the server holds the history of (`previousResponseId`,
 * `conversationId`) is refused: abridge cannot compact what it does not send.
 */
export class AbridgeSession implements Session {
  private readonly originals = new Originals();
  /** Fingerprints of the items the manager holds, in the order the runner last showed them. */
  private known: string[] = [];
  private readonly warned = new Set<string>();
  private turn = 0;
  private toolsKey: string | undefined;
  private systemText: string | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    readonly cm: ContextManager,
    private readonly options: AbridgeSessionOptions = {},
  ) {}

  async getSessionId(): Promise<string> {
    return this.cm.sessionId;
  }

  /** The conversation as the model sees it now (the compacted view), the last `limit` items when given. */
  async getItems(limit?: number): Promise<AgentInputItem[]> {
    const { system, items } = writeItems(activeMessages(this.cm.session), this.originals);
    const all = [...system.map((content) => ({ role: 'system', content }) as Item), ...items];
    return limit === undefined ? all : limit <= 0 ? [] : all.slice(-limit);
  }

  /**
   * What the runner persists at the end of a run (its input and what it generated): the items the model calls already
   * brought to the manager are recognized, the others (results of a run stopped before its next request, items added
   * by the app) are added.
   */
  async addItems(items: AgentInputItem[]): Promise<void> {
    await this.serial(async () => {
      const fps = items.map(fingerprint);
      // The longest run of these items that the manager's items end with: already held.
      let overlap = Math.min(fps.length, this.known.length);
      while (overlap > 0 && !sameRun(this.known, this.known.length - overlap, fps, 0, overlap)) overlap--;
      // Items the last request ended with may be followed by what the run added after it.
      if (overlap === 0) overlap = heldPrefix(this.known, fps);
      const fresh = items.slice(overlap);
      if (fresh.length === 0) return;
      for (const m of readItems(fresh, this.originals)) await this.cm.append(m);
      this.known.push(...fps.slice(overlap));
    });
  }

  /** Refused: the manager's session is append-only (compaction archives, nothing is deleted). */
  async popItem(): Promise<AgentInputItem | undefined> {
    throw new AbridgeError(
      'INVALID_INPUT',
      'AbridgeSession.popItem: an abridge session is append-only (compaction archives, nothing is deleted); start a new session instead',
    );
  }

  /** Refused: the manager's session is append-only; start a new session (a new ContextManager) instead. */
  async clearSession(): Promise<void> {
    throw new AbridgeError(
      'INVALID_INPUT',
      'AbridgeSession.clearSession: an abridge session is append-only (its store keeps every entry); start a new session (a new ContextManager) instead',
    );
  }

  /**
   * The model the agent calls, wrapped so that each request of a run sends the manager's compacted view and its answer
   * is recorded with the usage the provider billed: `new Agent({ …, model: session.model('gpt-5') })`. A name is
   * resolved by the SDK's default provider (`OpenAIProvider`: the default client, or the one `setDefaultOpenAIClient`
   * set); any `Model` can be given instead.
   */
  model(inner: Model | string): Model {
    let resolved: Promise<Model> | undefined;
    const innerModel = () =>
      (resolved ??=
        typeof inner === 'string'
          ? importSdk(() => import('@openai/agents'), '@openai/agents', 'abridge-context/openai-agents').then((sdk) =>
              new sdk.OpenAIProvider().getModel(inner),
            )
          : Promise.resolve(inner));
    return {
      getResponse: (request) => this.respond(request, innerModel),
      getStreamedResponse: (request) => this.stream(request, innerModel),
    };
  }

  /**
   * abridge's agent tools (`read_result`, `compact_context`, `tool_search` when tools are deferred, `memory` when set)
   * as Agents SDK function tools, to add to the agent's tools: the manager counts them itself.
   */
  async tools(): Promise<FunctionTool[]> {
    const sdk = await importSdk(() => import('@openai/agents'), '@openai/agents', 'AbridgeSession.tools()');
    return (await this.cm.tools()).map(
      (t) =>
        sdk.tool({
          name: t.name,
          description: t.description,
          // A plain copy: zod's JSON Schema carries a Standard Schema marker, which the SDK takes for a schema object.
          parameters: JSON.parse(JSON.stringify(t.inputSchema)) as never,
          strict: false,
          execute: (input: unknown) => t.run(input),
        }) as unknown as FunctionTool,
    );
  }

  // -------------------------------------------------------------------------------------------------------------------

  /** One model call at a time: the runner awaits each, but parallel agents may share a session by mistake. */
  private serial<T>(f: () => Promise<T>): Promise<T> {
    const next = this.queue.then(f, f);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private emit(e: OpenAIAgentsEvent): void {
    this.options.onEvent?.(e);
  }

  /** Brings the manager up to date with a request: its instructions, tools and the items not yet held. */
  private async absorb(request: ModelRequest): Promise<void> {
    if (request.previousResponseId || request.conversationId)
      throw new AbridgeError(
        'INVALID_INPUT',
        'AbridgeSession: the request continues a conversation the server holds (previousResponseId / conversationId); abridge cannot compact what it does not send: run without them',
      );
    const system = request.systemInstructions;
    if (system !== undefined && system !== this.systemText) {
      this.systemText = system;
      this.cm.setSystem(system);
    }
    const own = new Set((await this.cm.tools()).map((t) => t.name));
    const tools = toolsOf(request, own);
    const key = JSON.stringify(tools);
    // Only when they changed: setTools starts the deferral bookkeeping afresh.
    if (key !== this.toolsKey) {
      this.toolsKey = key;
      this.cm.setTools(tools);
    }
    const offered = new Set((request.tools as unknown as Loose[]).map((t) => String(t.name)));
    const missing = [...own].filter((n) => !offered.has(n) && !this.warned.has(n));
    if (missing.length) {
      for (const n of missing) this.warned.add(n);
      this.emit({ type: 'tools-not-offered', names: missing });
    }
    const items: Item[] =
      typeof request.input === 'string' ? [{ role: 'user', content: request.input } as Item] : request.input;
    const fps = items.map(fingerprint);
    let from: number;
    if (startsWith(fps, this.known)) from = this.known.length;
    else {
      // The next run starts from the view the session gave (`getItems`), plus its new input.
      const view = (await this.getItems()).map(fingerprint);
      if (view.length === 0 || startsWith(fps, view)) from = view.length;
      else {
        from = commonPrefix(this.known, fps);
        this.emit({ type: 'resync', kept: from, dropped: this.known.length - from, added: items.length - from });
      }
    }
    for (const m of readItems(items.slice(from), this.originals)) await this.cm.append(m);
    this.known = fps;
  }

  private async prepare(request: ModelRequest): Promise<{ prepared: PreparedTurn; request: ModelRequest }> {
    const maxTokens = request.modelSettings?.maxTokens;
    const prepared = await this.cm.prepare(maxTokens !== undefined ? { maxOutputTokens: maxTokens } : {});
    const { system, items } = writeItems(prepared.messages, this.originals);
    const instructions = [systemOf(this.cm), ...system].filter((t) => t.trim() !== '').join('\n\n');
    const out: ModelRequest = {
      ...request,
      input: items,
      // The provider sends exactly the reserve abridge counted.
      modelSettings: { ...request.modelSettings, maxTokens: prepared.pressure.maxOutputTokens },
    };
    if (instructions) out.systemInstructions = instructions;
    else delete out.systemInstructions;
    return { prepared, request: out };
  }

  /** The answer recorded with its usage; the runner's next request shows these items again. */
  private async record(output: readonly Item[], rawUsage: unknown): Promise<Usage | undefined> {
    const usage = usageOf(rawUsage);
    const parts = readItems(output, this.originals).flatMap((m) => m.parts);
    if (parts.length > 0 || usage)
      await this.cm.recordResponse({ role: 'assistant', parts, provider: 'openai' }, usage);
    this.known.push(...output.map(fingerprint));
    return usage;
  }

  private report(prepared: PreparedTurn, usage: Usage | undefined, retry: boolean): void {
    this.options.onRequest?.(hostRequestReport(this.turn, prepared, usage, retry));
  }

  /** After a refusal: compacts (once) for the retry, or rethrows. */
  private async recover(err: unknown, prepared: PreparedTurn): Promise<void> {
    const overflow = contextOverflow(err);
    if (!overflow) throw err;
    // The whole refusal: a window or count it states is what the manager learns from.
    const recovered = await this.cm.recoverFromOverflow(overflow);
    this.emit({ type: 'overflow', message: overflow.message, recovered });
    this.report(prepared, undefined, false);
    if (!recovered) throw err;
  }

  private respond(request: ModelRequest, inner: () => Promise<Model>): Promise<ModelResponse> {
    return this.serial(async () => {
      const model = await inner();
      await this.absorb(request);
      let { prepared, request: sent } = await this.prepare(request);
      let retry = false;
      let response: ModelResponse;
      this.turn++;
      try {
        response = await model.getResponse(sent);
      } catch (err) {
        await this.recover(err, prepared);
        ({ prepared, request: sent } = await this.prepare(request));
        retry = true;
        this.turn++;
        response = await model.getResponse(sent);
      }
      const usage = await this.record(response.output as Item[], response.usage);
      this.report(prepared, usage, retry);
      return response;
    });
  }

  private async *stream(request: ModelRequest, inner: () => Promise<Model>): AsyncIterable<StreamEvent> {
    // The stream is consumed while this generator runs: the session's queue is held until its last event.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const turn = this.serial(async () => {
      const model = await inner();
      await this.absorb(request);
      return { model, ...(await this.prepare(request)) };
    });
    const done = this.serial(() => held);
    try {
      let { model, prepared, request: sent } = await turn;
      let retry = false;
      for (let attempt = 0; ; attempt++) {
        this.turn++;
        let started = false;
        try {
          for await (const event of model.getStreamedResponse(sent)) {
            started = true;
            if (event.type === 'response_done') {
              const response = (event as { response: { output: Item[]; usage: unknown } }).response;
              const usage = await this.record(response.output, response.usage);
              this.report(prepared, usage, retry);
            }
            yield event;
          }
          return;
        } catch (err) {
          if (started || attempt > 0) throw err;
          await this.recover(err, prepared);
          ({ prepared, request: sent } = await this.prepare(request));
          retry = true;
        }
      }
    } finally {
      release();
      await done;
    }
  }
}

function startsWith(list: readonly string[], prefix: readonly string[]): boolean {
  if (prefix.length === 0 || list.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (list[i] !== prefix[i]) return false;
  return true;
}

function commonPrefix(a: readonly string[], b: readonly string[]): number {
  let k = 0;
  while (k < a.length && k < b.length && a[k] === b[k]) k++;
  return k;
}

function sameRun(a: readonly string[], at: number, b: readonly string[], from: number, n: number): boolean {
  for (let i = 0; i < n; i++) if (a[at + i] !== b[from + i]) return false;
  return true;
}

/** How many leading items of `fps` the manager holds as a block inside `known` (the run's input and output). */
function heldPrefix(known: readonly string[], fps: readonly string[]): number {
  if (fps.length === 0) return 0;
  let best = 0;
  for (let at = known.indexOf(fps[0]!); at >= 0; at = known.indexOf(fps[0]!, at + 1)) {
    let n = 0;
    while (at + n < known.length && n < fps.length && known[at + n] === fps[n]) n++;
    if (at + n === known.length) best = Math.max(best, n);
  }
  return best;
}
