/**
 * `abridge-context/mastra`: abridge inside a Mastra agent (`@mastra/core` 1.x), as an input processor.
 *
 * ```ts
 * const abridge = new AbridgeProcessor(new ContextManager({ model: 'gpt-5', provider: 'openai-responses' }));
 * const agent = new Agent({ id: 'coder', name: 'coder', instructions, model: openai('gpt-5'), tools,
 *   inputProcessors: [abridge], errorProcessors: [abridge] });
 * await agent.generate('Fix the failing test.', { maxSteps: 50 });
 * ```
 *
 * Mastra keeps the conversation (its message list, its memory) and converts it, at every step of the agentic loop,
 * into the prompt of the model's own specification (LanguageModelV2, V3 or V4). The processor works on that prompt,
 * as the AI SDK middleware does, and keeps the manager's state across steps and calls:
 * - `processInputStep` sets the step's max output to the reserve the manager counts (a provider's own default may be
 *   larger than the window allows);
 * - `processLLMRequest` adds what is new in the prompt to the manager, compacts when the window calls for it and hands
 *   the model the compacted view with the system prompt the manager counted — for this call only: Mastra's message
 *   list and memory keep the whole history, the manager's store keeps it too;
 * - `processLLMResponse` records the answer with the usage the provider billed, which anchors the next count;
 * - `processAPIError` (give the processor as an error processor too): a provider's overflow refusal compacts and
 *   retries once.
 *
 * History rule: as the AI SDK middleware's (`abridge-context/ai-sdk`): a prompt is expected to continue the one before,
 * or to start with the view last sent; any other is re-synced and `onEvent` says so. One processor (one
 * ContextManager) per conversation. Summaries are the manager's (`summarizer`, `summaryClient`; extractive by default):
 * the processor does not call the agent's model.
 *
 * `@mastra/core` is an optional peer and needs Node ≥ 22.13: nothing of it is imported, not even its types — the
 * processor is typed by the shapes it reads, so that this package builds and type-checks without it.
 */
import type { LanguageModelV3Content, LanguageModelV3Message, LanguageModelV3Prompt } from '@ai-sdk/provider';
import { contextOverflow } from '../formats/wire.js';
import type { ContextManager, ManagedTool, PreparedTurn } from '../manager/context-manager.js';
import { minCacheableTokens } from '../prompt/builder.js';
import { parseArguments } from '../model/parts.js';
import type { Usage } from '../model/types.js';
import { HistorySync, ownToolNames, systemOf, systemTextOf, withAnthropicBreakpoints } from './ai-sdk-history.js';
import { fromV3Message, toV3Prompt, usageFromV3 } from './ai-sdk-v3.js';
import { V4Bridge } from './ai-sdk-v4.js';
import { hostRequestReport, type HostEvent, type HostRequestReport } from '../manager/host-report.js';

type Loose = Record<string, unknown>;

/** One model request as the processor saw it (after the response, or after a refusal): Mastra retries a step itself. */
export type MastraRequestReport = Omit<HostRequestReport, 'retry'>;

/** Re-syncs of the prompt and overflow refusals (Mastra retries the step once the manager compacted). */
export type MastraEvent = HostEvent;

export interface AbridgeProcessorOptions {
  /** Called once per model request, with abridge's prediction and the provider's bill. */
  onRequest?: (report: MastraRequestReport) => void;
  /**
   * Re-syncs and overflow retries. abridge's own tools (`read_result`, `compact_context`) are not Mastra tools: create
   * the manager with `agentTools: false` unless the agent offers them.
   */
  onEvent?: (event: MastraEvent) => void;
  /** Anthropic models: mark the system prompt and the last message as cache breakpoints. Default true. */
  cache?: boolean;
}

/** A model as Mastra hands it to processors: resolved (V2, V3 or V4), or not yet (then read as V3). */
interface HostModel {
  specificationVersion?: string;
  provider?: string;
  modelId?: string;
}

/** A chunk of Mastra's stream, as `processLLMResponse` gets it (stripped to its type and payload). */
interface HostChunk {
  type: string;
  payload?: unknown;
}

/** The JSON Schema of a tool's input, whatever kind of tool Mastra hands over (AI SDK tool, Mastra tool, zod). */
function inputSchemaOf(tool: Loose): Record<string, unknown> {
  for (const key of ['inputSchema', 'parameters']) {
    const s = tool[key] as Loose | undefined;
    if (!s || typeof s !== 'object') continue;
    if (s.jsonSchema && typeof s.jsonSchema === 'object') return s.jsonSchema as Record<string, unknown>;
    const standard = s['~standard'] as { jsonSchema?: { input?: (o: unknown) => unknown } } | undefined;
    if (typeof standard?.jsonSchema?.input === 'function') {
      try {
        return standard.jsonSchema.input({ target: 'draft-07' }) as Record<string, unknown>;
      } catch {
        // A schema that cannot say its JSON Schema is counted as an empty object (the bills correct the count).
      }
    }
    if (s.type === 'object') return s as Record<string, unknown>;
  }
  return { type: 'object' };
}

/** Mastra's usage of a step: the raw V3 usage when the model is V3 or V4, else its flat (AI SDK 5) fields. */
function usageOf(u: Loose | undefined): Usage | undefined {
  if (!u) return undefined;
  const raw = u.raw as Loose | undefined;
  if (raw && typeof raw.inputTokens === 'object' && raw.inputTokens !== null)
    return usageFromV3(raw as unknown as Parameters<typeof usageFromV3>[0]);
  const input = typeof u.inputTokens === 'number' ? u.inputTokens : undefined;
  if (input === undefined) return undefined;
  const cacheRead = typeof u.cachedInputTokens === 'number' ? u.cachedInputTokens : 0;
  const cacheWrite = typeof u.cacheCreationInputTokens === 'number' ? u.cacheCreationInputTokens : 0;
  const usage: Usage = {
    input: Math.max(0, input - cacheRead - cacheWrite),
    output: typeof u.outputTokens === 'number' ? u.outputTokens : 0,
    cacheRead,
    cacheWrite,
  };
  if (typeof u.reasoningTokens === 'number' && u.reasoningTokens > 0) usage.reasoning = u.reasoningTokens;
  return usage;
}

/**
 * The answer a step's chunks carry, as V3 content (text and reasoning blocks gathered by id, tool calls), and its usage
 * (the `finish` chunk's). The chunks, not `steps`: Mastra calls the hook before it adds the step to `steps`.
 */
function answerOf(chunks: readonly HostChunk[]): { content: LanguageModelV3Content[]; usage: Loose | undefined } {
  const content: LanguageModelV3Content[] = [];
  const blocks = new Map<string, { type: 'text' | 'reasoning'; text: string; providerMetadata?: Loose }>();
  let usage: Loose | undefined;
  for (const chunk of chunks) {
    const p = (chunk.payload ?? {}) as Loose;
    const kind = /^(text|reasoning)-(start|delta|end)$/.exec(chunk.type);
    if (kind) {
      const type = kind[1] as 'text' | 'reasoning';
      const key = `${type}:${String(p.id ?? '')}`;
      let block = blocks.get(key);
      if (!block) {
        block = { type, text: '' };
        blocks.set(key, block);
        content.push(block as unknown as LanguageModelV3Content);
      }
      if (kind[2] === 'delta' && typeof p.text === 'string') block.text += p.text;
      if (p.providerMetadata && typeof p.providerMetadata === 'object')
        block.providerMetadata = { ...block.providerMetadata, ...(p.providerMetadata as Loose) };
    } else if (chunk.type === 'tool-call' && typeof p.toolCallId === 'string' && typeof p.toolName === 'string') {
      const input = p.args ?? p.input;
      content.push({
        type: 'tool-call',
        toolCallId: p.toolCallId,
        toolName: p.toolName,
        input: typeof input === 'string' ? input : JSON.stringify(parseArguments(input)),
        ...(p.providerExecuted ? { providerExecuted: true } : {}),
        ...(p.providerMetadata
          ? { providerMetadata: p.providerMetadata as Record<string, Record<string, never>> }
          : {}),
      });
    } else if (chunk.type === 'finish')
      usage = ((p.output as Loose | undefined)?.usage as Loose | undefined) ?? undefined;
  }
  return { content, usage };
}

/**
 * A Mastra processor (`inputProcessors: [p]`, and `errorProcessors: [p]` for the overflow retry) that hands the model
 * the manager's compacted view at every step and records each answer with its usage. See the module's comment.
 *
 * Errors: `ContextOverflowError` (code `CONTEXT_OVERFLOW`) when nothing can make a request fit window − max output
 * (nothing is sent); a provider's overflow refusal is recovered once when the processor is an error processor too.
 */
export class AbridgeProcessor {
  readonly id = 'abridge';
  readonly name = 'abridge context';
  private readonly sync: HistorySync;
  private readonly bridge = new V4Bridge();
  private toolsKey: string | undefined;
  private systemText: string | undefined;
  private reserve: number | undefined;
  private prepared: PreparedTurn | undefined;
  private turn = 0;

  constructor(
    readonly cm: ContextManager,
    private readonly options: AbridgeProcessorOptions = {},
  ) {
    this.sync = new HistorySync(cm, (e) => {
      if (e.type !== 'tools-not-offered') options.onEvent?.(e);
    });
  }

  /** Each step asks for the reserve the manager counts, and the manager counts the step's tools. */
  async processInputStep<S extends object>(args: {
    tools?: Record<string, unknown>;
    modelSettings?: S;
  }): Promise<{ modelSettings: S & { maxOutputTokens: number } }> {
    const own = await ownToolNames(this.cm);
    const tools: ManagedTool[] = [];
    for (const [name, t] of Object.entries(args.tools ?? {})) {
      if (own.has(name) || !t || typeof t !== 'object') continue;
      const description = (t as Loose).description;
      tools.push({
        name,
        ...(typeof description === 'string' ? { description } : {}),
        inputSchema: inputSchemaOf(t as Loose),
      });
    }
    const key = JSON.stringify(tools);
    // Only when they changed: setTools starts the deferral bookkeeping afresh.
    if (key !== this.toolsKey) {
      this.toolsKey = key;
      this.cm.setTools(tools);
    }
    const asked = (args.modelSettings as { maxOutputTokens?: unknown } | undefined)?.maxOutputTokens;
    if (typeof asked === 'number') this.reserve = asked;
    else this.reserve ??= this.cm.reserveTokens;
    return { modelSettings: { ...(args.modelSettings ?? ({} as S)), maxOutputTokens: this.reserve } };
  }

  /** The model gets the manager's view for this call; Mastra's message list keeps the whole history. */
  async processLLMRequest<P extends readonly unknown[]>(args: { prompt: P; model?: unknown }): Promise<{ prompt: P }> {
    const model = (args.model ?? {}) as HostModel;
    const v4 = model.specificationVersion === 'v4';
    const given = (v4 ? this.bridge.prompt(args.prompt) : args.prompt) as LanguageModelV3Prompt;
    const { system, rest } = systemTextOf(given);
    if (system !== undefined && system !== this.systemText) {
      this.systemText = system;
      this.cm.setSystem(system);
    }
    await this.sync.absorb(rest as LanguageModelV3Message[], (m) => fromV3Message(m, this.sync.originals));
    const prepared = await this.cm.prepare(this.reserve !== undefined ? { maxOutputTokens: this.reserve } : {});
    this.prepared = prepared;
    this.turn++;
    const view = toV3Prompt(prepared.messages, { system: systemOf(this.cm), originals: this.sync.originals });
    this.sync.setSent(view);
    let prompt = v4 ? (this.bridge.toV4(view) as unknown as LanguageModelV3Prompt) : view;
    if (this.options.cache !== false && model.provider?.startsWith('anthropic'))
      prompt = withAnthropicBreakpoints(prompt, prepared.pressure.predicted, minCacheableTokens(this.cm.currentModel));
    return { prompt: prompt as unknown as P };
  }

  /** The answer, recorded with the usage the provider billed (the chunks of the step Mastra just completed). */
  async processLLMResponse(args: { chunks?: readonly HostChunk[]; fromCache?: boolean }): Promise<void> {
    const answer = answerOf(args.chunks ?? []);
    // A cached answer was not billed for this prompt: its content is the model's, its usage is not evidence.
    const usage = args.fromCache ? undefined : usageOf(answer.usage);
    await this.sync.record(answer.content, usage);
    if (!this.prepared || !this.options.onRequest) return;
    // Mastra retries a step itself: its report has no retry flag.
    const { retry: _retry, ...report } = hostRequestReport(this.turn, this.prepared, usage, false);
    this.options.onRequest(report);
  }

  /** A provider's overflow refusal: compact under the window it stated, then let Mastra retry the step once. */
  async processAPIError(args: { error: unknown; retryCount?: number }): Promise<{ retry: boolean } | undefined> {
    const overflow = contextOverflow(args.error);
    if (!overflow || (args.retryCount ?? 0) > 0) return undefined;
    // The whole refusal: a window or count it states is what the manager learns from.
    const recovered = await this.cm.recoverFromOverflow(overflow);
    this.options.onEvent?.({ type: 'overflow', message: overflow.message, recovered });
    return { retry: recovered };
  }
}
