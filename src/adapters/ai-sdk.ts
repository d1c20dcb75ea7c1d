/**
 * `abridge-context/ai-sdk`: abridge inside an AI SDK 6 or 7 agent (`generateText` / `streamText` with tools).
 *
 * ```ts
 * const cm = new ContextManager({ model: 'claude-sonnet-4-5', provider: 'anthropic' });
 * const model = wrapLanguageModel({ model: anthropic('claude-sonnet-4-5'), middleware: abridgeMiddleware(cm) });
 * await generateText({ model, system, tools: { ...myTools, ...abridgeTools(cm) }, messages, stopWhen: stepCountIs(50) });
 * ```
 *
 * The middleware is the recommended way: the AI SDK keeps the whole history and sends it to the model at every step,
 * so a stateful integration has to keep its own view across steps and calls. The middleware absorbs what is new in each
 * prompt (tool results, user messages), records each response with the provider's usage, compacts when the window
 * calls for it and sends the manager's compacted view instead of the AI SDK's history — with the system prompt and the
 * tools counted and an explicit max output. `abridgePrepareStep` does the same from `prepareStep` for apps that cannot
 * wrap the model (it sees the usage one step late and cannot retry a refused request).
 *
 * History rule: the app's history is expected to grow by appending (what `generateText` does between steps, and an app
 * that adds `response.messages` and the next user message). A prompt that starts with the compacted view the middleware
 * last sent is a continuation too (an app that adopted it). Any other prompt — the app edited, rewound or restarted
 * its history — is re-synced: the messages after the longest common prefix are added as new messages (the manager
 * never forgets what it had; compaction archives it in time) and a `resync` event says how many. One middleware (one
 * ContextManager) serves one conversation at a time.
 *
 * Summaries: the model the middleware wraps writes them (one `doGenerate` with abridge's hand-off prompt, answer
 * checked, the extractive summary standing in when it fails), unless the manager was given a summarizer of its own
 * (`summarizer: 'extractive'`, a Summarizer, or `summaryClient` — e.g. `aiSdkClient(anthropic('claude-haiku-4-5'))`).
 *
 * AI SDK 6 (`ai@6`, LanguageModelV3) and AI SDK 7 (`ai@7`, LanguageModelV4) both: the middleware works on V3 forms and
 * converts a V4 model's prompts and answers at its edges (`ai-sdk-v4.ts`: only file data and file outputs of tool
 * results differ, plus V4's reasoning-file and custom parts); the public types are the installed `ai`'s.
 *
 * The AI SDK types are imported as types only: `ai` and `@ai-sdk/provider` are optional peer dependencies.
 */
import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3GenerateResult,
  LanguageModelV3Middleware,
  LanguageModelV3Prompt,
  LanguageModelV3StreamPart,
  LanguageModelV3StreamResult,
} from '@ai-sdk/provider';
import type { LanguageModelMiddleware } from 'ai';
import { contextOverflow } from '../formats/wire.js';
import { minCacheableTokens } from '../prompt/builder.js';
import type { ContextManager, ManagedTool, PreparedTurn } from '../manager/context-manager.js';
import type { Usage } from '../model/types.js';
import { AgentModelSummaries } from './ai-sdk-client.js';
import {
  HistorySync,
  ownToolNames,
  systemOf,
  systemTextOf,
  withAnthropicBreakpoints,
  type AiSdkEvent,
} from './ai-sdk-history.js';
import { StreamCollector } from './ai-sdk-stream.js';
import { fromV3Message, toV3Prompt, usageFromV3 } from './ai-sdk-v3.js';
import { isV4, V4Bridge } from './ai-sdk-v4.js';
import { hostRequestReport, type HostRequestReport } from '../manager/host-report.js';

export { aiSdkClient, type AiSdkClientOptions, type AiSdkLanguageModel } from './ai-sdk-client.js';
export type { AiSdkEvent } from './ai-sdk-history.js';
export {
  abridgeMessages,
  abridgePrepareStep,
  abridgeTools,
  type AbridgePrepareStepOptions,
} from './ai-sdk-prepare-step.js';

// contextOverflow (which recognizes the AI SDK's APICallError too) is the core's: `abridge-context`.

// ---------------------------------------------------------------------------------------------------------------------
// Public types

/** One model request as the middleware saw it (after the response, or after a refusal that was not recovered). */
export type AiSdkRequestReport = HostRequestReport;

export interface AbridgeMiddlewareOptions {
  /** Called once per model request, with abridge's prediction and the provider's bill. */
  onRequest?: (report: AiSdkRequestReport) => void;
  /** Re-syncs, overflow retries, tool-definition mismatches (also: the manager's own events on `cm`). */
  onEvent?: (event: AiSdkEvent) => void;
  /**
   * Anthropic models (`model.provider` anthropic.*): mark the system prompt and the last message as cache breakpoints
   * (`providerOptions.anthropic.cacheControl`), so the stable prefix is billed as cache reads. Default true.
   */
  cache?: boolean;
}

// ---------------------------------------------------------------------------------------------------------------------
// The middleware

interface PreparedCall {
  prepared: PreparedTurn;
  /** The max output the caller asked for (undefined: abridge's reserve), which a retry asks for again. */
  asked: number | undefined;
}

/**
 * A middleware for `wrapLanguageModel` — AI SDK 6's `LanguageModelV3Middleware` or AI SDK 7's (V4) middleware, the type
 * being the installed `ai`'s `LanguageModelMiddleware`; at run time it reads the specification of the model it is
 * given (`specificationVersion` 'v3' or 'v4') and answers in kind. It keeps the manager's state across steps and calls so that
 * `generateText` / `streamText` with tools stay within the window. See the module's comment for the history rule.
 *
 * Errors: `ContextOverflowError` (code `CONTEXT_OVERFLOW`) when nothing can make the request fit window − max output
 * (nothing is sent); a provider's overflow refusal is recovered once (compaction, then one retry) and rethrown when
 * that fails — `contextOverflow(err)` recognizes it, also inside the AI SDK's `RetryError`.
 */
export function abridgeMiddleware(cm: ContextManager, options: AbridgeMiddlewareOptions = {}): LanguageModelMiddleware {
  const emit = (e: AiSdkEvent) => options.onEvent?.(e);
  const sync = new HistorySync(cm, emit);
  // AI SDK 7 gives the middleware V4 models (V3 providers converted): their prompts and answers are converted to V3
  // at the edges, and what was read goes back as it was read.
  const bridge = new V4Bridge();
  const summaries = new AgentModelSummaries(cm);
  const calls = new WeakMap<object, PreparedCall>();
  const warned = new Set<string>();
  let turn = 0;
  let toolsKey: string | undefined;
  let systemText: string | undefined;

  async function prepare(
    params: LanguageModelV3CallOptions,
    model: LanguageModelV3,
  ): Promise<LanguageModelV3CallOptions> {
    // A retry's params are the ones this function returned: what the caller asked is kept beside them.
    const asked = calls.has(params) ? calls.get(params)!.asked : params.maxOutputTokens;
    const prepared = await cm.prepare(asked !== undefined ? { maxOutputTokens: asked } : {});
    const view = toV3Prompt(prepared.messages, { system: systemOf(cm), originals: sync.originals });
    sync.setSent(view);
    // A V4 prompt is typed as V3 here: the middleware's types are the V3 ones, the shapes the breakpoints touch agree.
    let prompt = isV4(model) ? (bridge.toV4(view) as unknown as LanguageModelV3Prompt) : view;
    if (options.cache !== false && model.provider.startsWith('anthropic'))
      prompt = withAnthropicBreakpoints(prompt, prepared.pressure.predicted, minCacheableTokens(cm.currentModel));
    // The provider sends exactly the reserve abridge counted (its own default may be far larger than the window allows).
    const out: LanguageModelV3CallOptions = { ...params, prompt, maxOutputTokens: prepared.pressure.maxOutputTokens };
    calls.set(out, { prepared, asked });
    return out;
  }

  async function transformParams({
    params,
    model,
  }: {
    params: LanguageModelV3CallOptions;
    model: LanguageModelV3;
  }): Promise<LanguageModelV3CallOptions> {
    summaries.offer(model);
    const { system, rest } = systemTextOf(isV4(model) ? bridge.prompt(params.prompt) : params.prompt);
    if (system !== undefined && system !== systemText) {
      systemText = system;
      cm.setSystem(system);
    }
    const own = await ownToolNames(cm);
    {
      // The call's tools are what the request carries (none when it has none), abridge's own aside: the manager adds those.
      const tools: ManagedTool[] = [];
      for (const t of params.tools ?? []) {
        if (own.has(t.name)) continue;
        if (t.type === 'function')
          tools.push(
            t.description !== undefined
              ? { name: t.name, description: t.description, inputSchema: t.inputSchema as Record<string, unknown> }
              : { name: t.name, inputSchema: t.inputSchema as Record<string, unknown> },
          );
        else
          tools.push({
            name: t.name,
            description: `provider tool ${t.id}`,
            inputSchema: { type: 'object', properties: {}, 'x-args': t.args },
          });
      }
      // Only when they changed: setTools starts the deferral bookkeeping afresh.
      const key = JSON.stringify(tools);
      if (key !== toolsKey) {
        toolsKey = key;
        cm.setTools(tools);
      }
    }
    const offered = new Set((params.tools ?? []).map((t) => t.name));
    const missing = [...own].filter((n) => !offered.has(n) && !warned.has(n));
    if (missing.length) {
      for (const n of missing) warned.add(n);
      emit({ type: 'tools-not-offered', names: missing });
    }
    await sync.absorb(rest, (m) => fromV3Message(m, sync.originals));
    return prepare(params, model);
  }

  function report(params: LanguageModelV3CallOptions, usage: Usage | undefined, retry: boolean): void {
    const call = calls.get(params);
    if (!call || !options.onRequest) return;
    options.onRequest(hostRequestReport(turn, call.prepared, usage, retry));
  }

  /** Runs a request; on an overflow refusal compacts and retries once with re-prepared params. */
  async function attempt<R>(
    params: LanguageModelV3CallOptions,
    model: LanguageModelV3,
    first: () => PromiseLike<R>,
    again: (p: LanguageModelV3CallOptions) => PromiseLike<R>,
  ): Promise<{ result: R; params: LanguageModelV3CallOptions; retry: boolean }> {
    turn++;
    try {
      return { result: await first(), params, retry: false };
    } catch (err) {
      const overflow = contextOverflow(err);
      if (!overflow) throw err;
      // The whole refusal: its stated window and count are what the manager learns from.
      const recovered = await cm.recoverFromOverflow(overflow);
      emit({ type: 'overflow', message: overflow.message, recovered });
      report(params, undefined, false);
      if (!recovered) throw err;
      const retried = await prepare(params, model);
      turn++;
      return { result: await again(retried), params: retried, retry: true };
    }
  }

  const middleware: LanguageModelV3Middleware = {
    specificationVersion: 'v3',
    transformParams,
    async wrapGenerate({
      doGenerate,
      params,
      model,
    }: {
      doGenerate: () => PromiseLike<LanguageModelV3GenerateResult>;
      params: LanguageModelV3CallOptions;
      model: LanguageModelV3;
    }) {
      const { result, params: used, retry } = await attempt(params, model, doGenerate, (p) => model.doGenerate(p));
      const usage = usageFromV3(result.usage);
      await sync.record(isV4(model) ? bridge.content(result.content) : result.content, usage);
      report(used, usage, retry);
      return result;
    },
    async wrapStream({
      doStream,
      params,
      model,
    }: {
      doStream: () => PromiseLike<LanguageModelV3StreamResult>;
      params: LanguageModelV3CallOptions;
      model: LanguageModelV3;
    }) {
      const { result, params: used, retry } = await attempt(params, model, doStream, (p) => model.doStream(p));
      const collector = new StreamCollector();
      const v4 = isV4(model);
      const stream = result.stream.pipeThrough(
        new TransformStream<LanguageModelV3StreamPart, LanguageModelV3StreamPart>({
          async transform(part, controller) {
            const read = v4 ? bridge.streamPart(part) : part;
            if (read) collector.observe(read);
            // Passed on first: recording waits only for what comes after the last part.
            controller.enqueue(part);
            if (part.type === 'finish') {
              const usage = usageFromV3(collector.usage);
              await sync.record(collector.content(), usage);
              report(used, usage, retry);
            }
          },
        }),
      );
      return { ...result, stream };
    },
  };
  // With AI SDK 7, `wrapLanguageModel` calls these hooks with V4 params and models (see `bridge`); the specification
  // version it ignores.
  return middleware as unknown as LanguageModelMiddleware;
}
