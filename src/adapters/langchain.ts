/**
 * `abridge-context/langchain`: abridge inside a LangChain v1 agent (`createAgent` of `langchain`).
 *
 * ```ts
 * const cm = new ContextManager({ model: 'claude-sonnet-4-6', provider: 'anthropic' });
 * const agent = createAgent({ model, tools, systemPrompt, middleware: [await abridgeLangChainMiddleware(cm)] });
 * await agent.invoke({ messages: [{ role: 'user', content: 'Fix the failing test.' }] });
 * ```
 *
 * A LangChain agent keeps its whole history in its state and sends all of it at every model call. The middleware's
 * `wrapModelCall` leaves the state alone (what a checkpointer stores stays the agent's) and changes what the model
 * gets: it adds what is new in the history (tool results, user messages) to the manager, lets the manager compact when
 * the window calls for it, and hands the model the manager's prepared request — its system prompt and compacted view,
 * as LangChain messages that the model sends as the body abridge counted (`langchain-messages.ts`). The model's answer
 * is recorded with the usage the provider billed (`usage_metadata`), which anchors the next count; recording it here
 * rather than in an `afterModel` hook ties the bill to the request it is for, and lets a refused request be compacted
 * and retried once. abridge's own tools (`read_result`, `compact_context`…) come with the middleware (its `tools`).
 *
 * History rule (as the AI SDK middleware's): the agent's history grows by appending; any other history (edited,
 * rewound) is re-synced from the longest common prefix and `onEvent` gets `{type: 'resync'}`. On its first call with a
 * manager that already holds a conversation (`ContextManager.resume`), the messages after the history's last AI
 * message are taken as new: the manager recorded the answers up to that one itself.
 *
 * `langchain` and `@langchain/core` are optional peer dependencies, imported as types only and loaded when
 * `abridgeLangChainMiddleware` is called.
 */
import type { BaseMessage } from '@langchain/core/messages';
import type { AgentMiddleware } from 'langchain';
import { AbridgeError } from '../errors.js';
import { contextOverflow, type AnthropicRequestBody, type ChatRequestBody } from '../formats/wire.js';
import type { ContextManager, ManagedTool, PreparedTurn } from '../manager/context-manager.js';
import type { Message, Usage } from '../model/types.js';
import {
  fingerprint,
  fromAnthropicBody,
  fromChatBody,
  fromLangChain,
  messageType,
  usageOf,
  type LangChainMessageClasses,
  type LangChainRequest,
} from './langchain-messages.js';
import { importSdk } from './missing-sdk.js';
import { hostRequestReport, type HostEvent, type HostRequestReport } from '../manager/host-report.js';

// ---------------------------------------------------------------------------------------------------------------------
// Public types

/**
 * One model request as the middleware saw it (after the response, or after a refusal that was not recovered); its max
 * output is the model's `maxTokens` when it states one.
 */
export type LangChainRequestReport = HostRequestReport;

/** Re-syncs of the agent's history and overflow retries. */
export type LangChainEvent = HostEvent;

export interface LangChainMiddlewareOptions {
  /** Called once per model request, with abridge's prediction and the provider's bill. */
  onRequest?: (report: LangChainRequestReport) => void;
  /** Re-syncs and overflow retries (also: the manager's own events on `cm`). */
  onEvent?: (event: LangChainEvent) => void;
}

// ---------------------------------------------------------------------------------------------------------------------
// Keeping the manager in step with the agent's history

/** Stands for the answer the middleware recorded: the next history holds it as the agent stored it. */
const RECORDED = Symbol('recorded response');
type Slot = string | typeof RECORDED;

class History {
  private known: Slot[] = [];
  private started = false;
  /** Fingerprints by message object: the agent's state hands the same objects back at every call. */
  private readonly prints = new WeakMap<object, string>();

  constructor(
    private readonly cm: ContextManager,
    private readonly emit: (e: LangChainEvent) => void,
  ) {}

  private print(m: BaseMessage): string {
    let p = this.prints.get(m);
    if (p === undefined) {
      p = fingerprint(m);
      this.prints.set(m, p);
    }
    return p;
  }

  /** Adds to the manager what the history holds beyond what it has seen. */
  async absorb(history: readonly BaseMessage[]): Promise<void> {
    const prints = history.map((m) => this.print(m));
    const types = history.map(messageType);
    const same = (k: number) => this.known[k] === prints[k] || (this.known[k] === RECORDED && types[k] === 'ai');
    let from: number;
    if (!this.started) {
      from = 0;
      if (this.cm.session.entries.some((e) => e.message))
        for (let i = history.length - 1; i >= 0; i--)
          if (types[i] === 'ai') {
            from = i + 1;
            break;
          }
    } else {
      let k = 0;
      while (k < this.known.length && k < history.length && same(k)) k++;
      from = k;
      if (k < this.known.length)
        this.emit({ type: 'resync', kept: k, dropped: this.known.length - k, added: history.length - k });
    }
    this.started = true;
    const fresh = history.slice(from).map(fromLangChain);
    if (fresh.length) await this.cm.append(...fresh);
    this.known = prints;
  }

  /** The model's answer, recorded with its bill; the next history holds it. */
  async record(message: Message, usage: Usage | undefined): Promise<void> {
    await this.cm.recordResponse(message, usage);
    this.known.push(RECORDED);
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// What the model is given

interface LangChainSdk {
  createMiddleware: typeof import('langchain').createMiddleware;
  classes: LangChainMessageClasses;
  tool: typeof import('@langchain/core/tools').tool;
  convertToOpenAITool: typeof import('@langchain/core/utils/function_calling').convertToOpenAITool;
}

async function loadSdk(): Promise<LangChainSdk> {
  const purpose = 'the LangChain middleware';
  const [lc, messages, tools, calling] = await Promise.all([
    importSdk(() => import('langchain'), 'langchain', purpose),
    importSdk(() => import('@langchain/core/messages'), '@langchain/core', purpose),
    importSdk(() => import('@langchain/core/tools'), '@langchain/core', purpose),
    importSdk(() => import('@langchain/core/utils/function_calling'), '@langchain/core', purpose),
  ]);
  const { HumanMessage, AIMessage, ToolMessage, SystemMessage } = messages;
  return {
    createMiddleware: lc.createMiddleware,
    classes: { HumanMessage, AIMessage, ToolMessage, SystemMessage },
    tool: tools.tool,
    convertToOpenAITool: calling.convertToOpenAITool,
  };
}

/** The prepared request as the LangChain messages that make the model send it. */
function requestOf(prepared: PreparedTurn, classes: LangChainMessageClasses): LangChainRequest {
  return prepared.provider === 'anthropic'
    ? fromAnthropicBody(prepared.request as AnthropicRequestBody, classes)
    : fromChatBody(prepared.request as ChatRequestBody, classes);
}

/**
 * The max output the model asks for, when it says (ChatAnthropic's `maxTokens`, ChatOpenAI's): the reserve abridge
 * must count, since the model sends its own. A model given by name (`'anthropic:claude-…'`) does not say: the
 * manager's `maxOutputTokens` is used.
 */
function maxTokensOf(model: unknown): number | undefined {
  for (const m of [model, (model as { bound?: unknown } | undefined)?.bound]) {
    const n = (m as { maxTokens?: unknown } | undefined)?.maxTokens;
    if (typeof n === 'number' && Number.isInteger(n) && n > 0) return n;
  }
  return undefined;
}

/** The AIMessage a model call answered with (a structured-output answer carries it first in `messages`). */
function answerOf(result: unknown): BaseMessage | undefined {
  if (messageType(result) === 'ai') return result as BaseMessage;
  const list = (result as { messages?: unknown } | undefined)?.messages;
  if (Array.isArray(list)) return list.find((m) => messageType(m) === 'ai') as BaseMessage | undefined;
  return undefined;
}

/** A tool of the agent as the manager counts it (JSON Schema input), whatever form LangChain was given it in. */
function managedTool(t: unknown, convert: LangChainSdk['convertToOpenAITool']): ManagedTool {
  const o = t as Record<string, unknown>;
  const name = String(o.name ?? o.type ?? 'tool');
  if (typeof o.input_schema === 'object' && o.input_schema !== null)
    return {
      name,
      ...(typeof o.description === 'string' ? { description: o.description } : {}),
      inputSchema: o.input_schema as Record<string, unknown>,
    };
  try {
    const f = convert(t as Parameters<typeof convert>[0]).function;
    return {
      name: f.name,
      ...(f.description !== undefined ? { description: f.description } : {}),
      inputSchema: (f.parameters ?? { type: 'object', properties: {} }) as Record<string, unknown>,
    };
  } catch {
    // A provider's own tool (web search, code execution): counted by its definition, as the AI SDK adapter does.
    return { name, description: `provider tool ${name}`, inputSchema: { type: 'object', properties: {}, 'x-args': o } };
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// The middleware

/**
 * A LangChain v1 agent middleware (for `createAgent({middleware})`) that keeps the manager's state across the agent's
 * model calls so that the model gets abridge's compacted view, within the window (see the module's comment). One
 * middleware (one ContextManager) per conversation. The manager's provider is the model's wire: `anthropic` for
 * ChatAnthropic, `openai-chat` for ChatOpenAI (its Responses mode takes the same messages).
 *
 * The reserve is the model's own `maxTokens` (what it sends as `max_tokens`), else the manager's `maxOutputTokens`.
 * Summaries are the manager's (extractive unless it was given a `summaryClient` or `summarizer`).
 *
 * Errors: AbridgeError `INVALID_INPUT` for a manager whose provider is `openai-responses`, `MISSING_DEPENDENCY` when
 * `langchain` or `@langchain/core` is not installed; at a model call, `ContextOverflowError` (code `CONTEXT_OVERFLOW`)
 * when nothing can make the request fit window − max output (nothing is sent), and a provider's overflow refusal is
 * recovered once (compaction, then one retry) and rethrown when that fails — `contextOverflow(err)` recognizes it. The
 * agent hands these on as the `cause` of LangChain's `MiddlewareError`.
 */
export async function abridgeLangChainMiddleware(
  cm: ContextManager,
  options: LangChainMiddlewareOptions = {},
): Promise<AgentMiddleware> {
  if (cm.provider === 'openai-responses')
    throw new AbridgeError(
      'INVALID_INPUT',
      "abridgeLangChainMiddleware: LangChain models take messages, not Responses items: create the ContextManager with provider 'openai-chat' for an OpenAI model (ChatOpenAI builds its Responses input from the same messages), 'anthropic' for ChatAnthropic",
    );
  const sdk = await loadSdk();
  const emit = (e: LangChainEvent) => options.onEvent?.(e);
  const history = new History(cm, emit);
  const own = await cm.tools();
  const ownNames = new Set(own.map((t) => t.name));
  const counted = new WeakMap<object, ManagedTool>();
  let toolsKey: string | undefined;
  let systemText: string | undefined;
  let turn = 0;

  function syncTools(tools: readonly unknown[]): void {
    const list: ManagedTool[] = [];
    for (const t of tools) {
      if (typeof t !== 'object' || t === null) continue;
      let m = counted.get(t);
      if (!m) {
        m = managedTool(t, sdk.convertToOpenAITool);
        counted.set(t, m);
      }
      // abridge's own tools are counted by the manager itself.
      if (!ownNames.has(m.name)) list.push(m);
    }
    // Only when they changed: setTools starts the deferral bookkeeping afresh.
    const key = JSON.stringify(list);
    if (key !== toolsKey) {
      toolsKey = key;
      cm.setTools(list);
    }
  }

  function report(prepared: PreparedTurn, usage: Usage | undefined, retry: boolean): void {
    options.onRequest?.(hostRequestReport(turn, prepared, usage, retry));
  }

  const middleware = sdk.createMiddleware({
    name: 'abridge',
    tools: own.map((t) =>
      sdk.tool(async (input: unknown) => t.run(input), {
        name: t.name,
        description: t.description,
        schema: t.inputSchema as Record<string, unknown>,
      }),
    ),
    async wrapModelCall(request, handler) {
      const system = request.systemMessage?.text ?? request.systemPrompt ?? '';
      // An agent without a system prompt leaves the manager's own.
      if (system !== '' && system !== systemText) {
        systemText = system;
        cm.setSystem(system);
      }
      syncTools(request.tools);
      await history.absorb(request.messages);
      const max = maxTokensOf(request.model);
      const prepareOptions = max !== undefined ? { maxOutputTokens: max } : {};
      const send = (prepared: PreparedTurn) => {
        const { system: systemMessage, messages } = requestOf(prepared, sdk.classes);
        return handler({ ...request, systemMessage, messages });
      };
      let prepared = await cm.prepare(prepareOptions);
      let retry = false;
      let result: Awaited<ReturnType<typeof handler>>;
      turn++;
      try {
        result = await send(prepared);
      } catch (err) {
        const overflow = contextOverflow(err);
        if (!overflow) throw err;
        const recovered = await cm.recoverFromOverflow(overflow);
        emit({ type: 'overflow', message: overflow.message, recovered });
        report(prepared, undefined, false);
        if (!recovered) throw err;
        prepared = await cm.prepare(prepareOptions);
        retry = true;
        turn++;
        result = await send(prepared);
      }
      const answer = answerOf(result);
      let usage: Usage | undefined;
      if (answer) {
        usage = usageOf(answer);
        const message = fromLangChain(answer);
        const meta = (answer as unknown as { response_metadata?: Record<string, unknown> }).response_metadata ?? {};
        if (typeof answer.id === 'string') message.responseId = answer.id;
        if (typeof meta.stop_reason === 'string') message.stopReason = meta.stop_reason;
        else if (typeof meta.finish_reason === 'string') message.stopReason = meta.finish_reason;
        await history.record({ ...message, provider: cm.provider === 'anthropic' ? 'anthropic' : 'openai' }, usage);
      }
      report(prepared, usage, retry);
      return result;
    },
  });
  return middleware as AgentMiddleware;
}
