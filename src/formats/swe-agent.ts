import type { TranscriptFormat } from './format.js';

// Placeholder until the reader lands: detects nothing.
export const sweAgentFormat: TranscriptFormat = {
  id: 'swe-agent',
  label: 'swe-agent',
  container: 'json',
  detect: () => 0,
};
