import type { TranscriptFormat } from './format.js';

// Placeholder until the reader lands: detects nothing.
export const openaiResponsesFormat: TranscriptFormat = {
  id: 'openai-responses',
  label: 'openai-responses',
  container: 'json',
  detect: () => 0,
};
