import { LlmSummarizer, type LlmClient } from '../compaction/summarizers/llm.js';
import type { SummaryRequest, Summarizer } from '../compaction/summarizers/summarizer.js';
import { AbridgeError } from '../errors.js';

export const LLM_PROVIDERS = ['anthropic', 'openai', 'openai-responses'] as const;
export type LlmProvider = (typeof LLM_PROVIDERS)[number];

const KEY_VARIABLE: Record<LlmProvider, string> = {
  anthropic: 'ANTHROPIC_API_KEY',
  openai: 'OPENAI_API_KEY',
  'openai-responses': 'OPENAI_API_KEY',
};

/** What the environment asks for; every value checked. */
export interface LlmEnvSettings {
  provider: LlmProvider;
  model: string;
  apiKey: string;
  baseURL?: string;
  contextWindow?: number;
}

/**
 * Reads the LLM summarizer's settings: ABRIDGE_LLM_PROVIDER (anthropic, openai or openai-responses),
 * ABRIDGE_LLM_MODEL, ABRIDGE_LLM_BASE_URL (optional), ABRIDGE_LLM_CONTEXT_WINDOW (optional; default: the model
 * catalog's) and the provider's key (ANTHROPIC_API_KEY or OPENAI_API_KEY). A missing or bad value is an INVALID_INPUT
 * error naming the variable and what it may be.
 */
export function llmSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): LlmEnvSettings {
  const providerRaw = env.ABRIDGE_LLM_PROVIDER?.trim();
  const allowed = LLM_PROVIDERS.join(', ');
  if (!providerRaw)
    throw new AbridgeError(
      'INVALID_INPUT',
      `ABRIDGE_LLM_PROVIDER is not set: the llm summarizer needs it (one of ${allowed})`,
    );
  if (!(LLM_PROVIDERS as readonly string[]).includes(providerRaw)) {
    throw new AbridgeError('INVALID_INPUT', `ABRIDGE_LLM_PROVIDER: expected one of ${allowed}, got "${providerRaw}"`);
  }
  const provider = providerRaw as LlmProvider;
  const model = env.ABRIDGE_LLM_MODEL?.trim();
  if (!model)
    throw new AbridgeError(
      'INVALID_INPUT',
      `ABRIDGE_LLM_MODEL is not set: the llm summarizer needs the id of the ${provider} model to summarize with (e.g. ${provider === 'anthropic' ? 'claude-haiku-4-5' : 'gpt-5-mini'})`,
    );
  const keyVar = KEY_VARIABLE[provider];
  const apiKey = env[keyVar]?.trim();
  if (!apiKey)
    throw new AbridgeError(
      'INVALID_INPUT',
      `${keyVar} is not set: the llm summarizer with ABRIDGE_LLM_PROVIDER=${provider} needs the API key`,
    );
  const settings: LlmEnvSettings = { provider, model, apiKey };
  const baseURL = env.ABRIDGE_LLM_BASE_URL?.trim();
  if (baseURL) {
    let url: URL | undefined;
    try {
      url = new URL(baseURL);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      throw new AbridgeError(
        'INVALID_INPUT',
        `ABRIDGE_LLM_BASE_URL: expected an http:// or https:// URL, got "${baseURL}"`,
      );
    }
    settings.baseURL = baseURL;
  }
  const windowRaw = env.ABRIDGE_LLM_CONTEXT_WINDOW?.trim();
  if (windowRaw) {
    const n = Number(windowRaw);
    if (!/^\d+$/.test(windowRaw) || !Number.isSafeInteger(n) || n < 1000) {
      throw new AbridgeError(
        'INVALID_INPUT',
        `ABRIDGE_LLM_CONTEXT_WINDOW: expected a whole number of tokens of at least 1000, got "${windowRaw}"`,
      );
    }
    settings.contextWindow = n;
  }
  return settings;
}

/** Creates the provider's client for `settings` (loading its SDK). */
export async function llmClientFor(settings: LlmEnvSettings): Promise<LlmClient> {
  const common = {
    model: settings.model,
    apiKey: settings.apiKey,
    ...(settings.baseURL ? { baseURL: settings.baseURL } : {}),
    ...(settings.contextWindow ? { contextWindow: settings.contextWindow } : {}),
  };
  if (settings.provider === 'anthropic') {
    const { anthropicClient } = await import('../adapters/anthropic.js');
    return anthropicClient(common);
  }
  const { openaiClient } = await import('../adapters/openai.js');
  return openaiClient({ ...common, api: settings.provider === 'openai-responses' ? 'responses' : 'chat' });
}

/**
 * The LLM summarizer the environment describes (see llmSettingsFromEnv). The settings are checked now; the provider
 * SDK is loaded and its client created on the first summary, so a missing SDK shows as that summary's failure.
 */
export function llmSummarizerFromEnv(env: NodeJS.ProcessEnv = process.env): Summarizer {
  return new LazyLlmSummarizer(llmSettingsFromEnv(env));
}

class LazyLlmSummarizer implements Summarizer {
  readonly name = 'llm';
  private inner: Promise<LlmSummarizer> | undefined;

  constructor(readonly settings: LlmEnvSettings) {}

  async summarize(request: SummaryRequest): Promise<string> {
    this.inner ??= llmClientFor(this.settings).then((client) => new LlmSummarizer(client));
    let summarizer: LlmSummarizer;
    try {
      summarizer = await this.inner;
    } catch (err) {
      this.inner = undefined; // let a later summary try again
      throw err;
    }
    return summarizer.summarize(request);
  }
}
