import type { TranscriptFormat } from './format.js';

// Placeholder until the reader lands: detects nothing.
export const aiSdkFormat: TranscriptFormat = {
  id: 'ai-sdk',
  label: 'ai-sdk',
  container: 'json',
  detect: () => 0,
};
