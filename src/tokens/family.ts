/** Families of models whose tokenizers and request framing behave alike. */
export type ProviderFamily = 'claude' | 'gpt' | 'gemini' | 'other';

export const PROVIDER_FAMILIES: readonly ProviderFamily[] = ['claude', 'gpt', 'gemini', 'other'];

/** The family of a model id (and provider, when the id alone does not say). */
export function familyOf(model: string | undefined, provider?: string): ProviderFamily {
  const m = (model ?? '').toLowerCase();
  const p = (provider ?? '').toLowerCase();
  if (m.includes('claude') || p === 'anthropic' || (p.includes('bedrock') && m.includes('anthropic'))) return 'claude';
  if (
    /(^|[/:])(gpt|o[1-9]|chatgpt|codex|text-davinci)/.test(m) ||
    m.includes('gpt-') ||
    p === 'openai' ||
    p === 'azure' ||
    p === 'openai-codex'
  )
    return 'gpt';
  if (m.includes('gemini') || m.includes('gemma') || p === 'google' || p === 'google-vertex' || p === 'gemini')
    return 'gemini';
  return 'other';
}
