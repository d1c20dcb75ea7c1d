import { TokenCounter } from '../tokens/counter.js';
import { loadExactTokenizer, type ExactTokenizer } from '../tokens/exact.js';

/** The estimator by default; the o200k_base tokenizer (loaded now) with --exact. */
export async function tokenCounterFor(
  exact: boolean,
): Promise<{ counter: TokenCounter; method: string; exact?: ExactTokenizer }> {
  if (!exact) return { counter: new TokenCounter(), method: 'estimate' };
  const tokenizer = await loadExactTokenizer('o200k_base');
  return { counter: new TokenCounter({ exact: tokenizer }), method: tokenizer.encoding, exact: tokenizer };
}
