/**
 * The helpers for apps that drive the AI SDK's loop themselves rather than wrap the model: abridge's tools as AI SDK
 * tools, a `prepareStep` that sends the compacted view, and the view as `ModelMessage[]`. Public, re-exported by
 * `ai-sdk.ts`.
 */
import type { ModelMessage, PrepareStepFunction, StepResult, Tool, ToolSet } from 'ai';
import { aiSdkFormat, encodeAiSdkMessages } from '../formats/ai-sdk.js';
import type { ContextManager } from '../manager/context-manager.js';
import { activeMessages } from '../model/view.js';
import type { Message } from '../model/types.js';
import { AgentModelSummaries } from './ai-sdk-client.js';
import { HistorySync, systemOf, type AiSdkEvent } from './ai-sdk-history.js';
import { base64, usageFromStep } from './ai-sdk-v3.js';

// ---------------------------------------------------------------------------------------------------------------------
// abridge's tools as AI SDK tools

/**
 * abridge's agent tools (`read_result`, `compact_context`, `tool_search` when tools are deferred, `memory` when set) as
 * AI SDK tools, to spread into `generateText({tools})`. The middleware does not count them twice: the manager counts
 * its own tools itself. Resolve it once (it loads the tools' zod schemas).
 */
export async function abridgeTools(cm: ContextManager): Promise<ToolSet> {
  const out: ToolSet = {};
  for (const t of await cm.tools()) {
    // `tool()` of the AI SDK is the identity: the object literal is the tool. zod 4 schemas are Standard Schemas.
    const def: Tool<unknown, string> = {
      description: t.description,
      inputSchema: t.input as Tool<unknown, string>['inputSchema'],
      execute: (input: unknown) => t.run(input),
    };
    out[t.name] = def;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------------
// prepareStep

export interface AbridgePrepareStepOptions {
  /** The max output tokens of each step (default: the manager's). Returned so the step asks for exactly that. */
  maxOutputTokens?: number;
  onEvent?: (event: AiSdkEvent) => void;
}

/** A ModelMessage with binary data as base64, so that abridge keeps it (the format reader takes JSON-safe values). */
function jsonSafe(m: ModelMessage): unknown {
  return JSON.parse(
    JSON.stringify(m, (_key, value: unknown) => {
      if (value instanceof Uint8Array) return base64(value);
      if (value instanceof URL) return value.href;
      return value;
    }),
  );
}

function fromModelMessage(m: ModelMessage): Message {
  const session = aiSdkFormat.readDocument!([jsonSafe(m)], 'prepareStep messages');
  return session.entries[0]?.message ?? { role: m.role, parts: [] };
}

/**
 * For apps that use `prepareStep` instead of the middleware: returns a `prepareStep` function that keeps the manager's
 * state across steps (with AI SDK 6, prepareStep's messages apply to that step only and the next step starts again from
 * the full history; with AI SDK 7, they carry forward and the next step starts with them: both are continuations) and
 * returns, for each step, the manager's compacted view as `messages`, its system prompt as `system` and the max
 * output abridge reserved. The previous step's answer is recorded with its usage when the next step starts.
 *
 * Prefer `abridgeMiddleware`: it records each answer as it comes, counts the tools and system prompt the call really
 * carries, and retries once after a provider's overflow refusal; this helper counts the system prompt and tools the
 * manager was given (`new ContextManager({system, tools})`) and cannot retry.
 */
export function abridgePrepareStep<TOOLS extends ToolSet = ToolSet>(
  cm: ContextManager,
  options: AbridgePrepareStepOptions = {},
): PrepareStepFunction<TOOLS> {
  const sync = new HistorySync(cm, (e) => options.onEvent?.(e));
  const summaries = new AgentModelSummaries(cm);
  let steps = 0;
  return async ({
    messages,
    steps: done,
    model,
  }: {
    messages: ModelMessage[];
    steps: StepResult<TOOLS>[];
    model?: unknown;
  }) => {
    summaries.offer(model);
    // The previous step's answer is in `messages` now; its usage comes with the step.
    const last = done.length > steps ? done[done.length - 1] : undefined;
    steps = done.length;
    let k = 0;
    const system: string[] = [];
    while (k < messages.length && messages[k]!.role === 'system')
      system.push((messages[k++] as { content: string }).content);
    if (system.length) cm.setSystem(system.join('\n\n'));
    await sync.absorb(messages.slice(k), fromModelMessage, last ? usageFromStep(last.usage) : undefined);
    const prepared = await cm.prepare(
      options.maxOutputTokens !== undefined ? { maxOutputTokens: options.maxOutputTokens } : {},
    );
    const out = encodeAiSdkMessages(prepared.messages) as ModelMessage[];
    const conversation = out.filter((m) => m.role !== 'system');
    const view = out.filter((m) => m.role === 'system').map((m) => m.content as string);
    // AI SDK 7 carries the messages a prepareStep returns forward: the next step's start with this conversation.
    sync.setSentMessages(conversation);
    return {
      system: [...systemOf(cm), ...view].join('\n\n'),
      messages: conversation,
      maxOutputTokens: prepared.pressure.maxOutputTokens,
    };
  };
}

/**
 * The manager's compacted view (what the model sees now) as AI SDK `ModelMessage[]`: for an app that keeps its own
 * history in the compacted form, or shows it. A prompt that starts with it continues the manager's session (see the
 * history rule); so does a prompt holding only what is new.
 */
export function abridgeMessages(cm: ContextManager): ModelMessage[] {
  return encodeAiSdkMessages(activeMessages(cm.session)) as ModelMessage[];
}
