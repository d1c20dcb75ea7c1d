/**
 * The example agent on the AI SDK 6 (`--provider ai-sdk-anthropic | ai-sdk-openai`, see agent.ts): `generateText`
 * (or `streamText` with `--stream`) with tools, the model wrapped in abridge's middleware, which keeps the manager's
 * state across steps, sends the compacted view, reserves exactly the max output it asks for, records each bill and
 * retries once after a provider's overflow refusal.
 */
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import {
  generateText,
  jsonSchema,
  stepCountIs,
  streamText,
  tool,
  wrapLanguageModel,
  type ModelMessage,
  type StopCondition,
  type ToolSet,
} from 'ai';
import { ContextOverflowError, contextOverflow, type ContextManager } from 'abridge-context';
import { abridgeMiddleware, abridgeTools } from 'abridge-context/ai-sdk';
import { bash, readFile } from './workspace.js';

export interface AiSdkAgentOptions {
  /** `ai-sdk-anthropic` (Messages) or `ai-sdk-openai` (Responses). */
  provider: string;
  baseURL: string;
  model: string;
  /** Each request's max output; default: abridge's reserve (the model's maximum, at most 32,000 and half the window). */
  maxTokens?: number | undefined;
  /** Stop after this many model requests. */
  turns: number;
  task: string;
  stream: boolean;
  /** The manager continues a stored session: the app passes only what is new. */
  resumed: boolean;
  stats: { requests: number; compactions: number; errors: number; refused: number };
  print: (line: object) => void;
}

const tools: ToolSet = {
  read_file: tool({
    description: 'Read a file of the workspace (a path relative to its root).',
    inputSchema: jsonSchema<{ path: string }>({
      type: 'object',
      properties: { path: { type: 'string' } },
      required: ['path'],
    }),
    execute: async ({ path }) => readFile(path).output,
  }),
  bash: tool({
    description: 'Run a shell command in the workspace and return what it prints.',
    inputSchema: jsonSchema<{ command: string }>({
      type: 'object',
      properties: { command: { type: 'string' } },
      required: ['command'],
    }),
    execute: async ({ command }) => bash(command).output,
  }),
};

/** Runs the agent; true when it ended without a refusal it could not recover from. */
export async function runAiSdkAgent(cm: ContextManager, o: AiSdkAgentOptions): Promise<boolean> {
  const { stats, print } = o;
  const root = o.baseURL.replace(/\/+$/, '').replace(/\/v1$/, '');
  const apiKey = process.env.EXAMPLE_API_KEY ?? 'sk-example';
  const base =
    o.provider === 'ai-sdk-anthropic'
      ? createAnthropic({ baseURL: `${root}/v1`, apiKey })(o.model)
      : // Responses API; `store: false` below makes the provider send the whole input (abridge's view), not item references.
        createOpenAI({ baseURL: `${root}/v1`, apiKey })(o.model);
  cm.on('compaction-complete', () => stats.compactions++);
  const model = wrapLanguageModel({
    model: base,
    middleware: abridgeMiddleware(cm, {
      onRequest: (r) => {
        stats.requests = r.turn;
        print({ turn: r.turn, predicted: r.predicted, reported: r.reported, level: r.level, compacted: r.compacted });
      },
      onEvent: (e) => {
        if (e.type === 'overflow') stats.errors++;
        if (e.type === 'resync' || e.type === 'tools-not-offered')
          process.stderr.write(`example agent: ${JSON.stringify(e)}\n`);
      },
    }),
  });

  const system = `You are a coding agent working in a repository. Your task: ${o.task}\nUse read_file and bash to investigate; answer without a tool call when you are done.`;
  // A resumed manager holds the conversation: the app passes only what is new (the middleware appends it to the view).
  const messages: ModelMessage[] = [{ role: 'user', content: o.resumed ? 'Continue the task.' : 'Start on the task.' }];
  const requestsDone: StopCondition<ToolSet> = () => stats.requests >= o.turns;
  const call = {
    model,
    system,
    messages,
    tools: { ...tools, ...(await abridgeTools(cm)) },
    ...(o.maxTokens ? { maxOutputTokens: o.maxTokens } : {}),
    stopWhen: [stepCountIs(o.turns), requestsDone],
    maxRetries: 0,
    providerOptions: { openai: { store: false } },
  };

  const refused = (err: unknown): false => {
    stats.refused++;
    const why =
      err instanceof ContextOverflowError
        ? `nothing can make the request fit: ${err.message}`
        : contextOverflow(err)
          ? `request refused after compaction: ${contextOverflow(err)!.message}`
          : `request failed: ${err instanceof Error ? err.message : String(err)}`;
    process.stderr.write(`example agent: ${why}\n`);
    return false;
  };
  try {
    if (!o.stream) {
      await generateText(call);
      return true;
    }
    let failure: unknown;
    const result = streamText({ ...call, onError: ({ error }) => void (failure ??= error) });
    for await (const part of result.fullStream) if (part.type === 'error') failure ??= part.error;
    return failure === undefined ? true : refused(failure);
  } catch (err) {
    return refused(err);
  }
}
