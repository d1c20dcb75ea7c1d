import type { TranscriptFormat } from './format.js';

// Placeholder until the reader lands: detects nothing.
export const anthropicFormat: TranscriptFormat = {
  id: 'anthropic',
  label: 'anthropic',
  container: 'json',
  detect: () => 0,
};
