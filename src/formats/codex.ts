import type { TranscriptFormat } from './format.js';

// Placeholder until the reader lands: detects nothing.
export const codexFormat: TranscriptFormat = {
  id: 'codex',
  label: 'codex',
  container: 'jsonl',
  detect: () => 0,
};
