/**
 * The Anthropic SDK's tool runner (`client.beta.messages.toolRunner`) on a ContextManager: `abridgeToolRunner`,
 * exported by `abridge-context/anthropic`.
 *
 * ```ts
 * const runner = abridgeToolRunner(client, cm, { tools: [readFile, bash] });
 * for await (const message of runner) console.log(message.content);
 * ```
 *
 * By default the tool runner holds the conversation in a server-side thread and sends only the new messages, so no
 * one on the client can shorten it. This helper runs it with `thread: false` and owns the history: every request the
 * runner sends is the manager's prepared request (its system prompt, compacted view, max output and tools), set with
 * `runner.setMessagesParams` after each turn. The runner still runs the tools; their results go to the manager (a
 * large one offloaded as it arrives), and each reply is recorded with the usage the provider billed.
 *
 * `@anthropic-ai/sdk` is imported as types only: the helper uses the client it is given.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type { BetaMessageStream } from '@anthropic-ai/sdk/lib/BetaMessageStream';
import type { BetaRunnableTool } from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool';
import type {
  BetaToolRunner,
  BetaToolRunnerParams,
  BetaToolRunnerRequestOptions,
} from '@anthropic-ai/sdk/lib/tools/BetaToolRunner';
import { AbridgeError } from '../errors.js';
import { decodeAnthropicContent } from '../formats/anthropic.js';
import { contextOverflow, type AnthropicRequestBody } from '../formats/wire.js';
import type { ContextManager, ManagedTool } from '../manager/context-manager.js';
import type { Message, Part } from '../model/types.js';

type BetaMessage = Anthropic.Beta.Messages.BetaMessage;
type BetaToolUnion = Anthropic.Beta.Messages.BetaToolUnion;
type RunnerTool = BetaToolRunnerParams['tools'][number];

/**
 * The tool runner's params less what the manager owns — `model`, `system`, `messages` and `max_tokens` come from
 * `cm.prepare()` each turn, and `thread` is always `false` — plus the max output to reserve (default: the manager's).
 */
export type AbridgeToolRunnerParams<Stream extends boolean = false> = Omit<
  BetaToolRunnerParams,
  'model' | 'system' | 'messages' | 'max_tokens' | 'thread' | 'stream'
> & {
  /** The max output of each request, reserved in the window (default: the manager's `maxOutputTokens`). */
  maxOutputTokens?: number;
  /** Stream each turn: the runner yields `BetaMessageStream`s (read each one before the next turn starts). */
  stream?: Stream;
};

/** One overflow refusal the helper met, and whether compacting let the retry through. */
export interface ToolRunnerOverflow {
  message: string;
  recovered: boolean;
}

/** The tool runner on the manager's history: iterate it as the SDK's runner, one item per model reply. */
export interface AbridgeToolRunner<Stream extends boolean = false>
  extends AsyncIterable<Stream extends true ? BetaMessageStream : BetaMessage> {
  /** Runs the loop to its end (the model stops calling tools, or `max_iterations`) and resolves to the last reply. */
  runUntilDone(): Promise<BetaMessage>;
  /** The SDK's runner once iteration has started (for `setRequestOptions`, `generateToolResponse`…); undefined before. */
  readonly runner: BetaToolRunner<Stream> | undefined;
  /** The provider's overflow refusals so far (each compacted and retried once). */
  readonly overflows: readonly ToolRunnerOverflow[];
}

/** A tool given to the runner as the manager counts it: its definition, or an approximation of a server tool's. */
function managedTool(t: RunnerTool): ManagedTool {
  const o = t as unknown as Record<string, unknown>;
  const name = String(o.name ?? o.mcp_server_name ?? o.type);
  if (typeof o.input_schema === 'object' && o.input_schema !== null)
    return {
      name,
      ...(typeof o.description === 'string' ? { description: o.description } : {}),
      inputSchema: o.input_schema as Record<string, unknown>,
    };
  // A server tool (web search, code execution) has no schema: counted by its definition, as the AI SDK adapter does.
  return { name, description: `provider tool ${name}`, inputSchema: { type: 'object', properties: {}, 'x-args': o } };
}

/**
 * Runs `client.beta.messages.toolRunner` over the manager's history (see the module's comment): before each request the
 * manager measures, compacts when the window calls for it, and its prepared request is what the runner sends. Append
 * the opening user message to `cm` first; to continue the conversation later, append the next one and call this again.
 * A provider's overflow refusal is recovered once (compaction, then the request again); the helper rethrows it when
 * that fails, and `ContextOverflowError` from `prepare()` when nothing can make a request fit.
 *
 * Summaries are the manager's (extractive unless it was given a `summaryClient`, e.g. `anthropicClient({model, client})`).
 * The manager's provider must be `anthropic` (AbridgeError `INVALID_INPUT` otherwise).
 */
export function abridgeToolRunner<Stream extends boolean = false>(
  client: Pick<Anthropic, 'beta'>,
  cm: ContextManager,
  params: AbridgeToolRunnerParams<Stream>,
  options?: BetaToolRunnerRequestOptions,
): AbridgeToolRunner<Stream> {
  if (cm.provider !== 'anthropic')
    throw new AbridgeError(
      'INVALID_INPUT',
      `abridgeToolRunner: the manager's provider is '${cm.provider}'; the Anthropic tool runner sends Anthropic requests: create the ContextManager with provider 'anthropic'`,
    );
  const { tools = [], maxOutputTokens, stream, max_iterations, runToolsEagerly, ...rest } = params;
  const settings = {
    ...(stream !== undefined ? { stream } : {}),
    ...(max_iterations !== undefined ? { max_iterations } : {}),
    ...(runToolsEagerly !== undefined ? { runToolsEagerly } : {}),
  };
  const given = new Map<string, RunnerTool>();
  const counted: ManagedTool[] = [];
  for (const t of tools) {
    const m = managedTool(t);
    given.set(m.name, t);
    counted.push(m);
  }
  cm.setTools(counted);
  let runner: BetaToolRunner<Stream> | undefined;
  const overflows: ToolRunnerOverflow[] = [];
  let last: BetaMessage | undefined;

  /** The next request as the manager prepared it, its tools runnable again. */
  async function turnParams() {
    const prepared = await cm.prepare({
      ...(maxOutputTokens !== undefined ? { maxOutputTokens } : {}),
      ...(Object.keys(rest).length ? { extra: rest } : {}),
    });
    const body = prepared.request as AnthropicRequestBody;
    const own = new Map((await cm.tools()).map((t) => [t.name, t]));
    const runnable = (body.tools ?? []).map((def): RunnerTool => {
      const name = String(def.name);
      const mine = given.get(name);
      // The definition abridge counted (its cache breakpoint included), with the tool's run and parse.
      if (mine && 'run' in mine) return { ...mine, ...def } as RunnerTool;
      if (mine) return mine;
      const tool = own.get(name);
      if (tool)
        return {
          ...(def as BetaToolUnion),
          run: (input: unknown) => tool.run(input),
          parse: (input: unknown) => input,
        } as BetaRunnableTool;
      return def as BetaToolUnion;
    });
    return { ...(body as unknown as BetaToolRunnerParams), tools: runnable };
  }

  /** The runner's tool results, as the manager's tool message (each result named after the call it answers). */
  function resultsOf(answer: { content: unknown }, reply: BetaMessage): Message {
    const names = new Map<string, string>();
    for (const b of reply.content) if (b.type === 'tool_use') names.set(b.id, b.name);
    const blocks = Array.isArray(answer.content) ? answer.content : [];
    const parts: Part[] = decodeAnthropicContent(blocks, 'content', 'the tool runner').map((p) => {
      if (p.type !== 'tool-result' || p.toolName) return p;
      const name = names.get(p.callId);
      return name ? { ...p, toolName: name } : p;
    });
    return { role: 'tool', parts };
  }

  async function* iterate(): AsyncGenerator<Stream extends true ? BetaMessageStream : BetaMessage> {
    const sdk = client.beta.messages.toolRunner(
      { ...(await turnParams()), ...settings, thread: false } as BetaToolRunnerParams,
      options,
    ) as unknown as BetaToolRunner<Stream>;
    runner = sdk;
    let items = sdk[Symbol.asyncIterator]();
    let retried = false;
    try {
      for (;;) {
        let step: IteratorResult<BetaMessage | BetaMessageStream>;
        try {
          step = await items.next();
        } catch (err) {
          const overflow = contextOverflow(err);
          if (!overflow || retried) throw err;
          const recovered = await cm.recoverFromOverflow(overflow);
          overflows.push({ message: overflow.message, recovered });
          if (!recovered) throw err;
          // The runner ends an iteration that threw and can be iterated again: the next one sends these params.
          const next = await turnParams();
          sdk.setMessagesParams((p) => ({ ...p, ...next }));
          items = sdk[Symbol.asyncIterator]();
          retried = true;
          continue;
        }
        retried = false;
        if (step.done) return;
        const item = step.value;
        let reply: BetaMessage;
        if ('finalMessage' in item) {
          yield item as Stream extends true ? BetaMessageStream : BetaMessage;
          reply = await item.finalMessage();
          await cm.record(reply);
        } else {
          reply = item;
          await cm.record(reply);
          yield item as Stream extends true ? BetaMessageStream : BetaMessage;
        }
        last = reply;
        // The runner caches what it ran: with the messages set below it does not run the calls again.
        const answer = await sdk.generateToolResponse();
        // No calls to answer: the runner ends the loop (or resumes a paused turn) on its own.
        if (!answer) continue;
        await cm.append(resultsOf(answer, reply));
        const next = await turnParams();
        sdk.setMessagesParams((p) => ({ ...p, ...next }));
      }
    } finally {
      // A caller that stops early (break) ends the SDK's loop too, as leaving a loop over the runner itself does.
      await items.return?.(undefined);
    }
  }

  return {
    [Symbol.asyncIterator]: iterate,
    async runUntilDone() {
      for await (const _ of iterate()) {
        // Each reply is recorded as it comes.
      }
      if (!last) throw new AbridgeError('PROVIDER_ERROR', 'abridgeToolRunner: the tool runner ended without a reply');
      return last;
    },
    get runner() {
      return runner;
    },
    get overflows() {
      return overflows;
    },
  };
}
