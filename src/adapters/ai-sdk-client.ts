/**
 * Summaries written by an AI SDK model: the agent's own (what the middleware and `abridgePrepareStep` offer the
 * manager) or another one (`aiSdkClient`, for the manager's `summaryClient`). Only `aiSdkClient` and its types are
 * public, re-exported by `ai-sdk.ts`.
 */
import type { LanguageModelV3, LanguageModelV3Content } from '@ai-sdk/provider';
import type { LanguageModel } from 'ai';
import { ModelCatalog } from '../budget/catalog.js';
import type { LlmClient } from '../compaction/summarizers/llm.js';
import type { ContextManager } from '../manager/context-manager.js';

/**
 * A model of the AI SDK that abridge can call itself: LanguageModelV3 (AI SDK 6) or, with AI SDK 7 installed,
 * LanguageModelV4 — whichever the installed `ai` accepts (not a gateway id string, not a V2 model).
 */
export type AiSdkLanguageModel = Extract<LanguageModel, { readonly specificationVersion: 'v3' | 'v4' }>;

/**
 * One completion by a V3 or V4 model: the system prompt and one user message in, the text of its answer out (a prompt
 * of texts and an answer's text parts have the same shape in both specifications).
 */
function completeWith(model: LanguageModelV3): LlmClient['complete'] {
  return async (req) => {
    const result = await model.doGenerate({
      prompt: [
        { role: 'system', content: req.system },
        { role: 'user', content: [{ type: 'text', text: req.prompt }] },
      ],
      maxOutputTokens: req.maxOutputTokens,
      ...(req.signal ? { abortSignal: req.signal } : {}),
    });
    return result.content
      .filter((c): c is Extract<LanguageModelV3Content, { type: 'text' }> => c.type === 'text')
      .map((c) => c.text)
      .join('');
  };
}

export interface AiSdkClientOptions {
  /** The model's window; default: the model catalog's for its id. */
  contextWindow?: number;
  /** The model's output limit; default: the model catalog's for its id. */
  maxOutputTokens?: number;
}

/**
 * An LlmClient on an AI SDK model (`anthropic('claude-haiku-4-5')`, `openai('gpt-5-mini')`…), for the manager's
 * `summaryClient`: summaries by another model than the agent's (the middleware's default is the agent's own).
 */
export function aiSdkClient(model: AiSdkLanguageModel, options: AiSdkClientOptions = {}): LlmClient {
  if (!isCallableModel(model))
    throw new TypeError(
      `aiSdkClient: a LanguageModelV3 or LanguageModelV4 model is needed (got specification ${String((model as { specificationVersion?: unknown }).specificationVersion)})`,
    );
  const info = new ModelCatalog().lookup(model.modelId, { provider: model.provider.split('.')[0]! });
  return {
    model: model.modelId,
    contextWindow: options.contextWindow ?? info.contextWindow,
    maxOutputTokens: options.maxOutputTokens ?? info.maxOutputTokens,
    complete: completeWith(model),
  };
}

/** Gives the manager the agent's own model to summarize with, once per model object it sees. */
export class AgentModelSummaries {
  private offered: unknown;

  constructor(private readonly cm: ContextManager) {}

  offer(model: unknown): void {
    if (model === this.offered) return;
    this.offered = model;
    // A model id (the AI SDK's gateway string) or an older specification cannot be called here: extractive, then.
    if (!isCallableModel(model)) return;
    this.cm.summarizeWithAgentModel(completeWith(model));
  }
}

/** A V3 or V4 model (typed as V3: what abridge calls — doGenerate with texts — is the same in both). */
function isCallableModel(model: unknown): model is LanguageModelV3 {
  if (typeof model !== 'object' || model === null) return false;
  const m = model as { specificationVersion?: unknown; doGenerate?: unknown };
  return (m.specificationVersion === 'v3' || m.specificationVersion === 'v4') && typeof m.doGenerate === 'function';
}
