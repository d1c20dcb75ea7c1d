/**
 * An example coding agent with abridge managing its context, on the official SDKs or the AI SDK 6.
 *
 *   npm run example:agent -- --provider anthropic|openai-chat|openai-responses|ai-sdk-anthropic|ai-sdk-openai
 *     --base-url URL --model ID [--window N] [--max-tokens N] --turns N --task TEXT [--db FILE --session ID] [--stream]
 *     [--native prefer|only|never] [--count-tokens]
 *
 * Without `--window` the model's window is the catalog's until the provider says otherwise: a refusal that states its
 * limit becomes the session's window (one refusal, recovered). Without `--max-tokens` each request asks for abridge's
 * default reserve (the model's maximum output, at most 32,000 and half the window).
 *
 * The task goes in the system prompt. The agent has `read_file {path}` and `bash {command}` (answered by a simulated
 * workspace: deterministic outputs of 20–40 KB) plus abridge's own tools. It stops when the model answers without a
 * tool call or after N model requests. With `--db/--session` the session is kept in SQLite, and a second run with the
 * same arguments continues it from its stored, compacted context.
 *
 * With `--native prefer` (or `only`) the provider manages the context itself where it can (Anthropic's tool-result
 * clearing and compaction, the Responses API's compaction), as abridge plans it; abridge compacts when that is not
 * enough (`prefer`). The Anthropic requests then go through the SDK's beta client, with the betas the turn names.
 * With `--count-tokens` the provider's token-count endpoint counts the requests abridge has mostly counted itself (the
 * first, the first after a compaction).
 *
 * It prints one JSON line per model request — {turn, predicted, reported, level, compacted} — and last
 * {"done": true, "requests", "compactions", "errors"}; it exits 1 when a request was refused and could not be
 * recovered, 2 on bad arguments.
 */
import { parseArgs } from 'node:util';
import {
  ContextManager,
  contextOverflow,
  promptTokens,
  type AnthropicRequestBody,
  type ChatRequestBody,
  type Message,
  type Part,
  type RequestProvider,
  type ResponsesRequestBody,
  type ToolSpec,
} from 'abridge-context';
import { bash, readFile } from './workspace.js';

type Provider = RequestProvider | 'ai-sdk-anthropic' | 'ai-sdk-openai';
const PROVIDERS: readonly Provider[] = [
  'anthropic',
  'openai-chat',
  'openai-responses',
  'ai-sdk-anthropic',
  'ai-sdk-openai',
];

function options() {
  const fail = (msg: string): never => {
    process.stderr.write(`example agent: ${msg}\n`);
    process.exit(2);
  };
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse();
  } catch (err) {
    return fail((err as Error).message.split('\n')[0]!);
  }
  const { values } = parsed;
  const provider = values.provider as Provider;
  if (!PROVIDERS.includes(provider))
    fail(`--provider: expected one of ${PROVIDERS.join(', ')}, got ${JSON.stringify(values.provider)}`);
  const int = (name: 'window' | 'max-tokens' | 'turns') => {
    if (values[name] === undefined) return undefined;
    const n = Number(values[name]);
    if (!Number.isSafeInteger(n) || n <= 0)
      fail(`--${name}: expected a positive integer, got ${JSON.stringify(values[name])}`);
    return n;
  };
  if (!values['base-url']) fail('--base-url is required (a server speaking the provider’s wire format)');
  if (!values.model) fail('--model is required');
  if (!values.task) fail('--task is required');
  if ((values.db === undefined) !== (values.session === undefined)) fail('--db and --session go together');
  if (!['prefer', 'only', 'never'].includes(values.native!))
    fail(`--native: expected prefer, only or never, got ${JSON.stringify(values.native)}`);
  return {
    provider,
    baseURL: values['base-url']!,
    model: values.model!,
    window: int('window'),
    maxTokens: int('max-tokens'),
    turns: int('turns')!,
    task: values.task!,
    db: values.db,
    session: values.session,
    stream: values.stream === true,
    native: values.native as 'prefer' | 'only' | 'never',
    countTokens: values['count-tokens'] === true,
  };
}

function parse() {
  return parseArgs({
    options: {
      provider: { type: 'string' },
      'base-url': { type: 'string' },
      model: { type: 'string' },
      window: { type: 'string' },
      'max-tokens': { type: 'string' },
      turns: { type: 'string', default: '50' },
      task: { type: 'string' },
      db: { type: 'string' },
      session: { type: 'string' },
      stream: { type: 'boolean', default: false },
      native: { type: 'string', default: 'never' },
      'count-tokens': { type: 'boolean', default: false },
    },
  });
}

const TOOLS: ToolSpec[] = [
  {
    name: 'read_file',
    description: 'Read a file of the workspace (a path relative to its root).',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  {
    name: 'bash',
    description: 'Run a shell command in the workspace and return what it prints.',
    inputSchema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
  },
];

function runWorkspaceTool(name: string, input: unknown): { output: string; isError: boolean } {
  const args = (input ?? {}) as Record<string, unknown>;
  if (name === 'read_file' && typeof args.path === 'string') return readFile(args.path);
  if (name === 'bash' && typeof args.command === 'string') return bash(args.command);
  return { output: `Error: unknown tool ${name} or bad input ${JSON.stringify(input)}`, isError: true };
}

const o = options();
const system = `You are a coding agent working in a repository. Your task: ${o.task}\nUse read_file and bash to investigate; answer without a tool call when you are done.`;
const stats = { requests: 0, compactions: 0, errors: 0, refused: 0 };
const print = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`);

let store: import('abridge-context').SessionStore | undefined;
if (o.db) {
  const { openSqliteStore } = await import('abridge-context/sqlite');
  store = await openSqliteStore(o.db);
}
const base = {
  model: o.model,
  system,
  tools: TOOLS,
  native: o.native,
  ...(o.countTokens ? { countTokens: await tokenCounter(o.provider) } : {}),
  ...(o.window ? { contextWindow: o.window } : {}),
  ...(o.maxTokens ? { maxOutputTokens: o.maxTokens } : {}),
};
const limits = o.maxTokens ? { maxOutputTokens: o.maxTokens } : {};
const resumed = store && o.session && (await store.getSession(o.session));

if (o.provider === 'ai-sdk-anthropic' || o.provider === 'ai-sdk-openai') {
  const { runAiSdkAgent } = await import('./agent-ai-sdk.js');
  const wire: RequestProvider = o.provider === 'ai-sdk-anthropic' ? 'anthropic' : 'openai-responses';
  const cm = resumed
    ? await ContextManager.resume(store!, o.session!, { ...base, provider: wire })
    : new ContextManager({ ...base, provider: wire, ...(store ? { store, sessionId: o.session! } : {}) });
  const ok = await runAiSdkAgent(cm, { ...o, resumed: Boolean(resumed), stats, print });
  finish(ok);
} else {
  const provider = o.provider;
  const cm = resumed
    ? await ContextManager.resume(store!, o.session!, { ...base, provider })
    : new ContextManager({ ...base, provider, ...(store ? { store, sessionId: o.session! } : {}) });
  cm.on('compaction-complete', () => stats.compactions++);
  if (!resumed) await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Start on the task.' }] });
  const send = await sender(provider);
  let ok = true;
  while (stats.requests < o.turns) {
    let turn = await cm.prepare(limits);
    let response: unknown;
    try {
      stats.requests++;
      response = await send(turn.request, turn.betas);
    } catch (err) {
      stats.errors++;
      const overflow = contextOverflow(err);
      // A deployment without the provider's own context management: abridge compacts by itself from now on. Or the
      // provider counted more than predicted: compact to a lower ceiling. Either way, retry once.
      if (cm.recoverFromNativeRefusal(err) || (overflow && (await cm.recoverFromOverflow(overflow)))) {
        try {
          stats.requests++;
          turn = await cm.prepare(limits);
          response = await send(turn.request, turn.betas);
        } catch (again) {
          stats.refused++;
          process.stderr.write(`example agent: request refused after compaction: ${(again as Error).message}\n`);
          ok = false;
          break;
        }
      } else {
        stats.refused++;
        process.stderr.write(`example agent: request refused: ${(err as Error).message}\n`);
        ok = false;
        break;
      }
    }
    const { message, usage } = await cm.record(response);
    print({
      turn: stats.requests,
      predicted: turn.pressure.predicted,
      reported: usage ? promptTokens(usage) : null,
      level: turn.pressure.level,
      compacted: turn.compaction !== undefined,
      ...(turn.native ? { native: { cleared: turn.native.cleared, compacting: turn.native.compacting } } : {}),
      ...(turn.pressure.sent !== undefined ? { sent: turn.pressure.sent } : {}),
    });
    const calls = message.parts.filter((p): p is Extract<Part, { type: 'tool-call' }> => p.type === 'tool-call');
    if (calls.length === 0) break;
    const results: Part[] = [];
    for (const call of calls) {
      const own = await cm.runTool(call);
      if (own) results.push(own);
      else {
        const r = runWorkspaceTool(call.name, call.arguments);
        results.push({
          type: 'tool-result',
          callId: call.id,
          toolName: call.name,
          content: [{ type: 'text', text: r.output }],
          isError: r.isError,
        });
      }
    }
    await cm.append({ role: 'tool', parts: results } satisfies Message);
  }
  finish(ok);
}

function finish(ok: boolean): never {
  print({ done: true, requests: stats.requests, compactions: stats.compactions, errors: stats.errors });
  void store?.close();
  process.exit(ok ? 0 : 1);
}

/** The provider's token-count endpoint through its SDK (Chat Completions has none). */
async function tokenCounter(provider: Provider): Promise<import('abridge-context').TokenCountEndpoint | undefined> {
  const apiKey = process.env.EXAMPLE_API_KEY ?? 'sk-example';
  if (provider === 'anthropic') {
    const { default: Anthropic } = await import('@anthropic-ai/sdk');
    const { anthropicTokenCounter } = await import('abridge-context/anthropic');
    return anthropicTokenCounter(new Anthropic({ baseURL: o.baseURL.replace(/\/v1\/?$/, ''), apiKey, maxRetries: 0 }));
  }
  if (provider === 'openai-responses') {
    const { default: OpenAI } = await import('openai');
    const { responsesTokenCounter } = await import('abridge-context/openai');
    const root = o.baseURL.replace(/\/+$/, '');
    return responsesTokenCounter(
      new OpenAI({ baseURL: root.endsWith('/v1') ? root : `${root}/v1`, apiKey, maxRetries: 0 }),
    );
  }
  return undefined;
}

/** A function sending a request body with the official SDK of the provider, streaming when asked. */
async function sender(
  provider: RequestProvider,
): Promise<(body: unknown, betas?: readonly string[]) => Promise<unknown>> {
  const apiKey = process.env.EXAMPLE_API_KEY ?? 'sk-example';
  if (provider === 'anthropic') {
    const { default: Anthropic } = await import('@anthropic-ai/sdk');
    const { anthropicParams, anthropicBetaParams } = await import('abridge-context/anthropic');
    const client = new Anthropic({ baseURL: o.baseURL.replace(/\/v1\/?$/, ''), apiKey, maxRetries: 0 });
    // Large max_tokens need streaming with this SDK (it refuses a non-streaming request that may run for long). A turn
    // that asks the provider to manage the context names the betas it needs: the beta client sends them.
    return (body, betas) =>
      betas?.length
        ? client.beta.messages.stream(anthropicBetaParams(body as AnthropicRequestBody, betas)).finalMessage()
        : client.messages.stream(anthropicParams(body as AnthropicRequestBody)).finalMessage();
  }
  const { default: OpenAI } = await import('openai');
  const { chatParams, responsesParams } = await import('abridge-context/openai');
  const root = o.baseURL.replace(/\/+$/, '');
  const client = new OpenAI({ baseURL: root.endsWith('/v1') ? root : `${root}/v1`, apiKey, maxRetries: 0 });
  if (provider === 'openai-chat') {
    if (o.stream)
      return (body) =>
        client.chat.completions
          .stream({ ...chatParams(body as ChatRequestBody), stream: true, stream_options: { include_usage: true } })
          .finalChatCompletion();
    return (body) => client.chat.completions.create(chatParams(body as ChatRequestBody));
  }
  if (o.stream)
    return (body) =>
      client.responses.stream({ ...responsesParams(body as ResponsesRequestBody), stream: true }).finalResponse();
  return (body) => client.responses.create(responsesParams(body as ResponsesRequestBody));
}
