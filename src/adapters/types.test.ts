/**
 * The typed entry points type-check where they are used: a consumer of the built package (`dist/`, as npm would
 * install it) passes `toAnthropicRequest(...)` straight to `client.messages.create(...)` and the OpenAI bodies to
 * `chat.completions.create` / `responses.create`, and reads the replies back; `tsc --noEmit` must accept it. A second
 * consumer mixes the providers up, and `tsc` must refuse it: so the check fails when the types drift apart.
 *
 * Needs the build (`npm run build`, which `npm test` runs first).
 */
import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const tsc = join(root, 'node_modules/typescript/bin/tsc');

const GOOD = `
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { activeMessages, contextOverflow, type Session, type Usage } from 'abridge-context';
import { anthropicClient, fromAnthropicMessage, toAnthropicRequest } from 'abridge-context/anthropic';
import { chatParams, fromOpenAIChatCompletion, fromOpenAIResponse, openaiClient, responsesParams, toOpenAIChatRequest, toOpenAIResponsesRequest } from 'abridge-context/openai';
import type { ChatRequestBody, ResponsesRequestBody } from 'abridge-context';

export async function turn(session: Session, anthropic: Anthropic, openai: OpenAI): Promise<Usage[]> {
  const messages = activeMessages(session);
  const usages: Usage[] = [];
  try {
    const reply = await anthropic.messages.create(
      toAnthropicRequest(messages, {
        model: 'claude-sonnet-4-5',
        maxOutputTokens: 8192,
        system: [{ text: 'You are a coding agent.', cache: true }, { text: 'Context: 41% full.' }],
        tools: [{ name: 'read', description: 'Read a file', inputSchema: { type: 'object', properties: { path: { type: 'string' } } } }],
        providerTools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }],
        cacheTools: true,
        cacheConversation: true,
        extra: { temperature: 0.2 },
      }),
    );
    const a = fromAnthropicMessage(reply);
    if (a.usage) usages.push(a.usage);
    const stream = anthropic.messages.stream(toAnthropicRequest(messages, { model: 'claude-haiku-4-5', maxOutputTokens: 1024 }));
    const final: Anthropic.Message = await stream.finalMessage();
    usages.push(fromAnthropicMessage(final).usage!);
  } catch (err) {
    const overflow = contextOverflow(err);
    if (overflow?.promptTokens !== undefined && overflow.limit !== undefined) console.log(overflow.promptTokens - overflow.limit);
  }
  const completion = await openai.chat.completions.create(
    toOpenAIChatRequest(messages, { model: 'gpt-5', maxOutputTokens: 4096, tools: [{ name: 'ls', inputSchema: { type: 'object' } }], extra: { reasoning_effort: 'low' } }),
  );
  const c = fromOpenAIChatCompletion(completion);
  if (c.usage) usages.push(c.usage);
  const response = await openai.responses.create(
    toOpenAIResponsesRequest(messages, { model: 'gpt-5', maxOutputTokens: 4096, system: 'Be brief.', providerTools: [{ type: 'web_search' }], extra: { store: false, include: ['reasoning.encrypted_content'] } }),
  );
  const r = fromOpenAIResponse(response);
  const next = [...messages, r.message];
  console.log(next.length, r.finish, r.stopReason);
  await anthropicClient({ model: 'claude-haiku-4-5' });
  await openaiClient({ model: 'gpt-5-mini', api: 'responses' });
  return usages;
}

// Streaming: prepare().request through chatParams / responsesParams with {stream: true}, to the SDK's .stream() helper
// and to create({stream: true}); the non-streaming form still answers a ChatCompletion / Response.
export async function streamed(chat: ChatRequestBody, responses: ResponsesRequestBody, openai: OpenAI): Promise<Usage[]> {
  const usages: Usage[] = [];
  const c1: OpenAI.Chat.ChatCompletion = await openai.chat.completions.stream(chatParams(chat, { stream: true })).finalChatCompletion();
  const c2: OpenAI.Chat.ChatCompletion = await openai.chat.completions.create(chatParams(chat));
  for await (const chunk of await openai.chat.completions.create(chatParams(chat, { stream: true }))) if (chunk.usage) console.log(chunk.usage.prompt_tokens);
  const r1: OpenAI.Responses.Response = await openai.responses.stream(responsesParams(responses, { stream: true })).finalResponse();
  const r2: OpenAI.Responses.Response = await openai.responses.create(responsesParams(responses));
  for await (const event of await openai.responses.create(responsesParams(responses, { stream: true }))) if (event.type === 'response.completed') console.log(event.response.usage?.input_tokens);
  const sent: OpenAI.Chat.ChatCompletionCreateParamsStreaming = chatParams(chat, { stream: true });
  for (const u of [fromOpenAIChatCompletion(c1).usage, fromOpenAIChatCompletion(c2).usage, fromOpenAIResponse(r1).usage, fromOpenAIResponse(r2).usage]) if (u) usages.push(u);
  console.log(sent.stream_options?.include_usage);
  return usages;
}
`;

/** Each line is one misuse tsc must refuse (checked one error per line). */
const BAD = `
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { Message } from 'abridge-context';
import { fromAnthropicMessage, toAnthropicRequest } from 'abridge-context/anthropic';
import { chatParams, fromOpenAIChatCompletion, responsesParams, toOpenAIChatRequest, toOpenAIResponsesRequest } from 'abridge-context/openai';
import type { ChatRequestBody, ResponsesRequestBody } from 'abridge-context';

export async function wrong(messages: Message[], anthropic: Anthropic, openai: OpenAI, chatBody: ChatRequestBody, respBody: ResponsesRequestBody) {
  const chat = toOpenAIChatRequest(messages, { model: 'gpt-5', maxOutputTokens: 1 });
  const resp = toOpenAIResponsesRequest(messages, { model: 'gpt-5', maxOutputTokens: 1 });
  const anth = toAnthropicRequest(messages, { model: 'claude', maxOutputTokens: 1 });
  await anthropic.messages.create(chat); // BAD 1
  await openai.chat.completions.create(anth); // BAD 2
  await openai.responses.create(chat); // BAD 3
  fromAnthropicMessage(await openai.chat.completions.create(chat)); // BAD 4
  fromOpenAIChatCompletion(await anthropic.messages.create(anth)); // BAD 5
  await openai.chat.completions.create(resp); // BAD 6
  toAnthropicRequest(messages, { model: 'claude', maxOutputTokens: 1, providerTools: [{ type: 'not_a_tool' }] }); // BAD 7
  const streamed: OpenAI.Chat.ChatCompletion = await openai.chat.completions.create(chatParams(chatBody, { stream: true })); // BAD 8
  const completed: OpenAI.Responses.Response = await openai.responses.create(responsesParams(respBody, { stream: true })); // BAD 9
  await openai.responses.stream(chatParams(chatBody, { stream: true })); // BAD 10
  await openai.chat.completions.stream(responsesParams(respBody, { stream: true })); // BAD 11
  console.log(streamed, completed);
}
`;

let dir = '';

function run(project: string): Promise<{ code: number; out: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [tsc, '--noEmit', '-p', project],
      { cwd: dir, timeout: 300_000 },
      (err, stdout, stderr) => {
        done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` });
      },
    );
  });
}

function project(name: string, file: string, source: string): string {
  writeFileSync(join(dir, file), source);
  const config = {
    compilerOptions: {
      target: 'ES2022',
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      lib: ['ES2023', 'DOM', 'DOM.Iterable'],
      types: [],
      strict: true,
      noEmit: true,
      skipLibCheck: true,
    },
    files: [file],
  };
  writeFileSync(join(dir, name), JSON.stringify(config));
  return name;
}

describe('the typed entry points against the official SDKs (built package, tsc)', () => {
  beforeAll(() => {
    if (
      !existsSync(join(root, 'dist/adapters/anthropic.d.ts')) ||
      !existsSync(join(root, 'dist/adapters/openai.d.ts'))
    ) {
      throw new Error('dist/adapters/*.d.ts not found: run `npm run build` first (npm test does)');
    }
    // A consumer project beside nothing of ours: abridge and the SDKs installed as links, as npm would lay them out.
    dir = mkdtempSync(join(tmpdir(), 'abridge-types-'));
    mkdirSync(join(dir, 'node_modules/@anthropic-ai'), { recursive: true });
    symlinkSync(root, join(dir, 'node_modules/abridge-context'), 'dir');
    symlinkSync(join(root, 'node_modules/@anthropic-ai/sdk'), join(dir, 'node_modules/@anthropic-ai/sdk'), 'dir');
    symlinkSync(join(root, 'node_modules/openai'), join(dir, 'node_modules/openai'), 'dir');
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', type: 'module', private: true }));
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a consumer passing the bodies straight to the SDK clients type-checks', async () => {
    const r = await run(project('tsconfig.good.json', 'good.ts', GOOD));
    expect(r.out).toBe('');
    expect(r.code).toBe(0);
  }, 300_000);

  it('at run time the subpaths load, the 0.1 alias subpaths are gone, and no SDK is imported statically', async () => {
    const script = [
      "const a = await import('abridge-context/anthropic');",
      "const o = await import('abridge-context/openai');",
      "const gone = await Promise.all(['abridge-context/providers/anthropic', 'abridge-context/providers/openai'].map((p) => import(p).then(() => 'loaded', (e) => e.code)));",
      "const core = await import('abridge-context');",
      'console.log(JSON.stringify([...gone, typeof a.anthropicClient, typeof o.openaiClient, a.contextOverflow === core.contextOverflow, typeof a.toAnthropicRequest, typeof o.toOpenAIResponsesRequest, typeof core.toRequest]));',
    ].join('\n');
    writeFileSync(join(dir, 'load.mjs'), script);
    const out = await new Promise<string>((done, fail) =>
      execFile(process.execPath, ['load.mjs'], { cwd: dir }, (err, stdout, stderr) =>
        err ? fail(new Error(stderr)) : done(stdout),
      ),
    );
    expect(JSON.parse(out)).toEqual([
      'ERR_PACKAGE_PATH_NOT_EXPORTED',
      'ERR_PACKAGE_PATH_NOT_EXPORTED',
      'function',
      'function',
      true,
      'function',
      'function',
      'function',
    ]);
    // The SDK types are type-only imports: the built modules (entry files and the chunks they share) load an SDK only
    // where a client is created (import()).
    const built = readdirSync(join(root, 'dist'), { recursive: true, encoding: 'utf8' }).filter(
      (f) => f.endsWith('.js') && !f.startsWith('analysis/view/'),
    );
    expect(built).toContain('adapters/anthropic.js');
    for (const f of built) {
      const js = readFileSync(join(root, 'dist', f), 'utf8');
      expect(js, f).not.toMatch(/^import[^;]*from ['"](@anthropic-ai\/sdk|openai)['"]/m);
    }
  }, 300_000);

  it('a consumer mixing the providers up is refused, each misuse on its own line', async () => {
    const r = await run(project('tsconfig.bad.json', 'bad.ts', BAD));
    expect(r.code).not.toBe(0);
    const lines = BAD.split('\n');
    const refused = new Set<number>();
    for (const m of r.out.matchAll(/bad\.ts\((\d+),\d+\): error TS\d+/g)) {
      const marker = /\/\/ BAD (\d+)/.exec(lines[Number(m[1]) - 1] ?? '');
      expect(marker, `an error on a line not marked BAD: ${lines[Number(m[1]) - 1]}`).not.toBeNull();
      refused.add(Number(marker![1]));
    }
    expect([...refused].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
  }, 300_000);
});
