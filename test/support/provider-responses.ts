/**
 * Provider responses as the APIs document them (written by hand from the API references: Anthropic Messages, OpenAI
 * Chat Completions, OpenAI Responses), with cached-token usage, for tests of `fromResponse` and of SDK clients talking
 * to a loopback server.
 */

/** A 1×1 PNG. */
export const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/58BAwAI/AL+hc2rNAAAAABJRU5ErkJggg==';

/** Anthropic `Message`: thinking, text and two parallel tool_use blocks; a cache hit plus a cache write. */
export const ANTHROPIC_MESSAGE = {
  id: 'msg_01XFDUDYJgAACzvnptvVoYEL',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-5-20250929',
  content: [
    { type: 'thinking', thinking: 'The test expects an array.', signature: 'EuYBCkQYAiJAk' },
    { type: 'text', text: 'Reading both files.', citations: null },
    { type: 'tool_use', id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'read', input: { path: 'src/parser.ts' } },
    { type: 'tool_use', id: 'toolu_01VQx2LpPzm3cX8fN4Kc8Z1a', name: 'read', input: { path: 'src/parser.test.ts' } },
  ],
  stop_reason: 'tool_use',
  stop_sequence: null,
  usage: {
    input_tokens: 12,
    cache_creation_input_tokens: 1953,
    cache_read_input_tokens: 48210,
    cache_creation: { ephemeral_5m_input_tokens: 1953, ephemeral_1h_input_tokens: 0 },
    output_tokens: 318,
    server_tool_use: null,
    service_tier: 'standard',
  },
};

/** OpenAI `ChatCompletion`: text and a tool call; 1,920 of 2,006 prompt tokens cached, 128 reasoning tokens. */
export const CHAT_COMPLETION = {
  id: 'chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG',
  object: 'chat.completion',
  created: 1_741_570_283,
  model: 'gpt-5-2025-08-07',
  choices: [
    {
      index: 0,
      message: {
        role: 'assistant',
        content: 'Let me look.',
        refusal: null,
        annotations: [],
        tool_calls: [
          { id: 'call_abc123', type: 'function', function: { name: 'read', arguments: '{"path":"src/parser.ts"}' } },
        ],
      },
      logprobs: null,
      finish_reason: 'tool_calls',
    },
  ],
  usage: {
    prompt_tokens: 2006,
    completion_tokens: 187,
    total_tokens: 2193,
    prompt_tokens_details: { cached_tokens: 1920, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 128,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  },
  service_tier: 'default',
  system_fingerprint: null,
};

/** OpenAI `Response`: a reasoning item (summary + encrypted content), a message, a function call; cached input. */
export const RESPONSES_RESPONSE = {
  id: 'resp_67ccd3a9da748190baa7f1570fe91ac604becb25c45c1d41',
  object: 'response',
  created_at: 1_741_476_777,
  status: 'completed',
  error: null,
  incomplete_details: null,
  instructions: null,
  max_output_tokens: 1000,
  model: 'gpt-5-2025-08-07',
  output: [
    {
      type: 'reasoning',
      id: 'rs_0a1b',
      summary: [{ type: 'summary_text', text: 'The user wants a listing; call ls.' }],
      encrypted_content: 'gAAAAABoEncrypted',
    },
    {
      type: 'message',
      id: 'msg_0a1c',
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text: 'Listing the files.', annotations: [], logprobs: [] }],
    },
    {
      type: 'function_call',
      id: 'fc_0a1d',
      call_id: 'call_9x',
      name: 'ls',
      arguments: '{"path":"."}',
      status: 'completed',
    },
  ],
  parallel_tool_calls: true,
  previous_response_id: null,
  reasoning: { effort: 'medium', summary: 'auto' },
  store: false,
  temperature: 1,
  text: { format: { type: 'text' } },
  tool_choice: 'auto',
  tools: [],
  top_p: 1,
  truncation: 'disabled',
  usage: {
    input_tokens: 5230,
    input_tokens_details: { cached_tokens: 4096 },
    output_tokens: 412,
    output_tokens_details: { reasoning_tokens: 256 },
    total_tokens: 5642,
  },
  user: null,
  metadata: {},
};
