/**
 * A minimal loopback Anthropic Messages server (SSE streaming) for headless agent tests, independent of abridge's token
 * counting: a prompt counts one token per 4 characters of its JSON (system, messages, tools). It refuses, with
 * Anthropic's real 400 bodies, a prompt over the window, a prompt plus `max_tokens` over the window, and broken tool
 * pairing; a scripted `answer` plays the model. (A fuller fake provider is being built on another branch.)
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface AnthropicBlock {
  type: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: unknown;
}
export interface AnthropicRequest {
  model: string;
  max_tokens: number;
  system?: unknown;
  tools?: unknown[];
  messages: { role: 'user' | 'assistant'; content: string | AnthropicBlock[] }[];
}
export type ModelAnswer = { text: string } | { tool: { name: string; input: Record<string, unknown> }; text?: string };

export interface ServedRequest {
  body: AnthropicRequest;
  promptTokens: number;
  refused?: string;
}

export interface FakeAnthropic {
  baseURL: string;
  requests: ServedRequest[];
  close(): Promise<void>;
}

export const promptTokensOf = (b: AnthropicRequest): number =>
  Math.ceil(JSON.stringify([b.system ?? '', b.messages, b.tools ?? []]).length / 4);

/** The first reason Anthropic would refuse this body, as its error message; undefined when it would accept it. */
export function refusal(b: AnthropicRequest, window: number): string | undefined {
  if (typeof b.max_tokens !== 'number') return 'max_tokens: Field required';
  const prompt = promptTokensOf(b);
  if (prompt > window) return `prompt is too long: ${prompt} tokens > ${window} maximum`;
  if (prompt + b.max_tokens > window)
    return `input length and \`max_tokens\` exceed context limit: ${prompt} + ${b.max_tokens} > ${window}, decrease input length or \`max_tokens\` and try again`;
  const blocks = (m: AnthropicRequest['messages'][number]) => (typeof m.content === 'string' ? [] : m.content);
  for (let i = 0; i < b.messages.length; i++) {
    const m = b.messages[i]!;
    if (i === 0 && m.role !== 'user') return 'messages: first message must use the "user" role';
    const calls =
      m.role === 'assistant'
        ? blocks(m)
            .filter((x) => x.type === 'tool_use')
            .map((x) => x.id)
        : [];
    if (calls.length > 0) {
      const next = b.messages[i + 1];
      const answered = new Set(
        next && next.role === 'user'
          ? blocks(next)
              .filter((x) => x.type === 'tool_result')
              .map((x) => x.tool_use_id)
          : [],
      );
      const missing = calls.filter((id) => !answered.has(id));
      if (missing.length > 0)
        return `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
    }
    if (m.role === 'user') {
      const prev = b.messages[i - 1];
      const asked = new Set(
        prev && prev.role === 'assistant'
          ? blocks(prev)
              .filter((x) => x.type === 'tool_use')
              .map((x) => x.id)
          : [],
      );
      const k = blocks(m).findIndex((x) => x.type === 'tool_result' && !asked.has(x.tool_use_id));
      if (k !== -1)
        return `messages.${i}.content.${k}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${blocks(m)[k]!.tool_use_id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
    }
  }
  return undefined;
}

export async function startFakeAnthropic(options: {
  window: number;
  answer: (body: AnthropicRequest) => ModelAnswer;
}): Promise<FakeAnthropic> {
  const requests: ServedRequest[] = [];
  let n = 0;
  const server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (text += c));
    req.on('end', () => {
      const body = JSON.parse(text) as AnthropicRequest;
      const promptTokens = promptTokensOf(body);
      const refused = refusal(body, options.window);
      requests.push(refused ? { body, promptTokens, refused } : { body, promptTokens });
      if (refused) {
        res.writeHead(400, { 'content-type': 'application/json', 'request-id': `req_${n++}` });
        res.end(JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: refused } }));
        return;
      }
      const answer = options.answer(body);
      const id = n++;
      const events: [string, unknown][] = [
        [
          'message_start',
          {
            type: 'message_start',
            message: {
              id: `msg_${id}`,
              type: 'message',
              role: 'assistant',
              model: body.model,
              content: [],
              stop_reason: null,
              stop_sequence: null,
              usage: {
                input_tokens: promptTokens,
                output_tokens: 1,
                cache_creation_input_tokens: 0,
                cache_read_input_tokens: 0,
              },
            },
          },
        ],
      ];
      let index = 0;
      let output = 0;
      if (answer.text) {
        events.push([
          'content_block_start',
          { type: 'content_block_start', index, content_block: { type: 'text', text: '' } },
        ]);
        events.push([
          'content_block_delta',
          { type: 'content_block_delta', index, delta: { type: 'text_delta', text: answer.text } },
        ]);
        events.push(['content_block_stop', { type: 'content_block_stop', index }]);
        output += Math.ceil(answer.text.length / 4);
        index++;
      }
      if ('tool' in answer) {
        const json = JSON.stringify(answer.tool.input);
        events.push([
          'content_block_start',
          {
            type: 'content_block_start',
            index,
            content_block: { type: 'tool_use', id: `toolu_${id}`, name: answer.tool.name, input: {} },
          },
        ]);
        events.push([
          'content_block_delta',
          { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: json } },
        ]);
        events.push(['content_block_stop', { type: 'content_block_stop', index }]);
        output += Math.ceil(json.length / 4);
      }
      events.push([
        'message_delta',
        {
          type: 'message_delta',
          delta: { stop_reason: 'tool' in answer ? 'tool_use' : 'end_turn', stop_sequence: null },
          usage: { output_tokens: output },
        },
      ]);
      events.push(['message_stop', { type: 'message_stop' }]);
      res.writeHead(200, {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache',
        'request-id': `req_${id}`,
      });
      res.end(events.map(([event, data]) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`).join(''));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve()))),
  };
}
