import type { TranscriptFormat } from './format.js';

// Placeholder until the reader lands: detects nothing.
export const openaiChatFormat: TranscriptFormat = {
  id: 'openai-chat',
  label: 'openai-chat',
  container: 'json',
  detect: () => 0,
};
