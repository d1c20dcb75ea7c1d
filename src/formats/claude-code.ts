import type { TranscriptFormat } from './format.js';

// Placeholder until the reader lands: detects nothing.
export const claudeCodeFormat: TranscriptFormat = {
  id: 'claude-code',
  label: 'claude-code',
  container: 'jsonl',
  detect: () => 0,
};
