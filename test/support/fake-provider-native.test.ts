/**
 * The fake provider's provider-native context management, driven through the official Anthropic SDK's beta client:
 * `context_management.edits` (clear_tool_uses_20250919, clear_thinking_20251015) at and below their thresholds, the
 * bill of the edited prompt (exact, from the fake's own counter via count_tokens), `applied_edits` in JSON and SSE,
 * and the refusals.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CLEARED_TOOL_RESULT,
  COMPACTION_BETA,
  CONTEXT_MANAGEMENT_BETA,
  signThinking,
  startFakeProvider,
  type FakeProvider,
} from './fake-provider.js';

const MODEL = 'claude-sonnet-4-6';
const open: FakeProvider[] = [];
async function fake(): Promise<FakeProvider> {
  const f = await startFakeProvider({ window: 200_000 });
  open.push(f);
  return f;
}
afterEach(async () => {
  while (open.length) await open.pop()!.close();
});
const client = (f: FakeProvider) =>
  new Anthropic({ baseURL: f.baseURL, apiKey: 'sk-ant-test', maxRetries: 0, timeout: 60_000 });

const tools: Anthropic.Beta.BetaTool[] = [
  {
    name: 'read_file',
    description: 'Read a file',
    input_schema: { type: 'object', properties: { path: { type: 'string' } } },
  },
  {
    name: 'bash',
    description: 'Run a command',
    input_schema: { type: 'object', properties: { command: { type: 'string' } } },
  },
];

/** A task, then `names.length` tool calls (tool `names[k]`), each answered by a long result. */
function conversation(names: string[]): Anthropic.Beta.BetaMessageParam[] {
  const messages: Anthropic.Beta.BetaMessageParam[] = [{ role: 'user', content: 'Inspect the repository.' }];
  names.forEach((name, k) => {
    const input = name === 'bash' ? { command: `ls -la dir${k} && cat notes${k}.txt` } : { path: `src/file${k}.ts` };
    messages.push({ role: 'assistant', content: [{ type: 'tool_use', id: `toolu_${k}`, name, input }] });
    messages.push({
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: `toolu_${k}`,
          content: `output ${k}: ` + 'lorem ipsum dolor sit amet '.repeat(200 + k),
        },
      ],
    });
  });
  return messages;
}

/** The same conversation with the given tool uses cleared as the fake clears them. */
function cleared(
  messages: Anthropic.Beta.BetaMessageParam[],
  ids: string[],
  inputs = false,
): Anthropic.Beta.BetaMessageParam[] {
  return messages.map((m): Anthropic.Beta.BetaMessageParam => {
    if (!Array.isArray(m.content)) return m;
    const content = (m.content as Anthropic.Beta.BetaContentBlockParam[]).map((b) => {
      if (b.type === 'tool_result' && ids.includes(b.tool_use_id)) return { ...b, content: CLEARED_TOOL_RESULT };
      if (b.type === 'tool_use' && inputs && ids.includes(b.id)) return { ...b, input: {} };
      return b;
    });
    return { role: m.role as 'user' | 'assistant', content };
  });
}

async function count(f: FakeProvider, messages: Anthropic.Beta.BetaMessageParam[]): Promise<number> {
  const r = await client(f).beta.messages.countTokens({ model: MODEL, messages, tools });
  return r.input_tokens;
}

const betas = [CONTEXT_MANAGEMENT_BETA];

/** A request through the beta client with the context-management beta and the tools: the model, 1,000 tokens of output, then `body`. */
const create = (f: FakeProvider, body: Omit<Anthropic.Beta.MessageCreateParamsNonStreaming, 'model' | 'max_tokens'>) =>
  client(f).beta.messages.create({ model: MODEL, max_tokens: 1000, betas, tools, ...body });
const ids = (n: number) => Array.from({ length: n }, (_, k) => `toolu_${k}`);

describe('Anthropic clear_tool_uses_20250919', () => {
  it('triggers at its input-token threshold and not below, keeps the last 3 tool uses, bills the edited prompt', async () => {
    const f = await fake();
    const messages = conversation(['read_file', 'bash', 'read_file', 'bash', 'read_file', 'bash']);
    const full = await count(f, messages);
    const edited = await count(f, cleared(messages, ids(3)));
    expect(edited).toBeLessThan(full);

    const below = await create(f, {
      messages,
      context_management: {
        edits: [{ type: 'clear_tool_uses_20250919', trigger: { type: 'input_tokens', value: full + 1 } }],
      },
    });
    expect(below.context_management).toEqual({ applied_edits: [] });
    expect(below.usage.input_tokens).toBe(full);

    const at = await create(f, {
      messages,
      context_management: {
        edits: [{ type: 'clear_tool_uses_20250919', trigger: { type: 'input_tokens', value: full } }],
      },
    });
    expect(at.context_management).toEqual({
      applied_edits: [{ type: 'clear_tool_uses_20250919', cleared_tool_uses: 3, cleared_input_tokens: full - edited }],
    });
    expect(at.usage.input_tokens).toBe(edited);
    const rec = f.requests.at(-1)!;
    expect(rec.originalPromptTokens).toBe(full);
    expect(rec.promptTokens).toBe(edited);
    expect(rec.appliedEdits).toEqual(at.context_management!.applied_edits);
  });

  it('the default trigger is 100,000 input tokens: a small prompt is not edited', async () => {
    const f = await fake();
    const messages = conversation(['read_file', 'bash', 'read_file', 'bash', 'read_file']);
    const r = await create(f, {
      messages,
      context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] },
    });
    expect(r.context_management?.applied_edits).toEqual([]);
    expect(r.usage.input_tokens).toBe(await count(f, messages));
  });

  it('respects keep, exclude_tools, clear_tool_inputs and a tool_uses trigger', async () => {
    const f = await fake();
    const messages = conversation(['read_file', 'bash', 'read_file', 'bash', 'read_file', 'bash']);
    // keep 1: toolu_0..4 are candidates; bash (1, 3) excluded → 0, 2, 4 cleared, with their inputs.
    const edited = await count(f, cleared(messages, ['toolu_0', 'toolu_2', 'toolu_4'], true));
    const full = await count(f, messages);
    const r = await create(f, {
      messages,
      context_management: {
        edits: [
          {
            type: 'clear_tool_uses_20250919',
            trigger: { type: 'tool_uses', value: 6 },
            keep: { type: 'tool_uses', value: 1 },
            exclude_tools: ['bash'],
            clear_tool_inputs: true,
          },
        ],
      },
    });
    expect(r.context_management?.applied_edits).toEqual([
      { type: 'clear_tool_uses_20250919', cleared_tool_uses: 3, cleared_input_tokens: full - edited },
    ]);
    expect(r.usage.input_tokens).toBe(edited);

    // 7 tool uses needed: not triggered.
    const none = await create(f, {
      messages,
      context_management: { edits: [{ type: 'clear_tool_uses_20250919', trigger: { type: 'tool_uses', value: 7 } }] },
    });
    expect(none.context_management?.applied_edits).toEqual([]);
    expect(none.usage.input_tokens).toBe(full);
  });

  it('does not edit when clear_at_least cannot be reached', async () => {
    const f = await fake();
    const messages = conversation(['read_file', 'bash', 'read_file', 'bash']);
    const full = await count(f, messages);
    const possible = full - (await count(f, cleared(messages, ['toolu_0'])));
    const edit = (value: number) =>
      create(f, {
        messages,
        context_management: {
          edits: [
            {
              type: 'clear_tool_uses_20250919',
              trigger: { type: 'input_tokens', value: 1 },
              clear_at_least: { type: 'input_tokens', value },
            },
          ],
        },
      });
    const no = await edit(possible + 1);
    expect(no.context_management?.applied_edits).toEqual([]);
    expect(no.usage.input_tokens).toBe(full);
    const yes = await edit(possible);
    expect(yes.context_management?.applied_edits).toEqual([
      { type: 'clear_tool_uses_20250919', cleared_tool_uses: 1, cleared_input_tokens: possible },
    ]);
  });

  it('reports applied_edits in the stream (message_delta) and count_tokens counts the edited prompt', async () => {
    const f = await fake();
    const messages = conversation(['read_file', 'bash', 'read_file', 'bash', 'read_file']);
    const full = await count(f, messages);
    const edited = await count(f, cleared(messages, ids(2)));
    const context_management = {
      edits: [{ type: 'clear_tool_uses_20250919' as const, trigger: { type: 'input_tokens' as const, value: 1000 } }],
    };
    const stream = client(f).beta.messages.stream({
      model: MODEL,
      max_tokens: 1000,
      betas,
      tools,
      messages,
      context_management,
    });
    const deltas: unknown[] = [];
    stream.on('streamEvent', (e) => {
      if (e.type === 'message_delta') deltas.push(e.context_management);
    });
    const final = await stream.finalMessage();
    const applied = [{ type: 'clear_tool_uses_20250919', cleared_tool_uses: 2, cleared_input_tokens: full - edited }];
    expect(deltas).toEqual([{ applied_edits: applied }]);
    expect(final.context_management).toEqual({ applied_edits: applied });
    expect(final.usage.input_tokens).toBe(edited);
    expect(f.requests.at(-1)!.stream).toBe(true);

    const counted = await client(f).beta.messages.countTokens({
      model: MODEL,
      betas,
      tools,
      messages,
      context_management,
    });
    expect(counted.input_tokens).toBe(edited);
    expect(counted.context_management).toEqual({ original_input_tokens: full });
  });

  it('breaks the simulated cache from the first edited block on', async () => {
    const f = await fake();
    const names = ['read_file', 'bash', 'read_file', 'bash', 'read_file'];
    const messages = conversation(names);
    const system: Anthropic.Beta.BetaTextBlockParam[] = [
      { type: 'text', text: 'You are a careful agent. '.repeat(300), cache_control: { type: 'ephemeral' } },
    ];
    const request = (value: number) =>
      create(f, {
        system,
        messages,
        cache_control: { type: 'ephemeral' },
        context_management: { edits: [{ type: 'clear_tool_uses_20250919', trigger: { type: 'input_tokens', value } }] },
      });
    const first = await request(1_000_000);
    const second = await request(1_000_000);
    const total =
      first.usage.input_tokens + first.usage.cache_creation_input_tokens! + first.usage.cache_read_input_tokens!;
    expect(second.usage.cache_read_input_tokens).toBe(total);
    const third = await request(1000);
    expect(third.context_management?.applied_edits).toHaveLength(1);
    const billed =
      third.usage.input_tokens + third.usage.cache_creation_input_tokens! + third.usage.cache_read_input_tokens!;
    expect(billed).toBe(f.requests.at(-1)!.promptTokens);
    // Only the prefix up to the system breakpoint (before the first cleared result) is read back.
    expect(third.usage.cache_read_input_tokens).toBeGreaterThan(0);
    expect(third.usage.cache_read_input_tokens).toBeLessThan(f.requests.at(-1)!.promptTokens!);
    expect(third.usage.cache_read_input_tokens).toBe(
      f.requests.at(-1)!.promptTokens! - third.usage.cache_creation_input_tokens!,
    );
  });
});

describe('Anthropic clear_thinking_20251015', () => {
  const thought = (k: number) => `Thinking about step ${k}: ` + 'considering the options carefully. '.repeat(40);
  const thinking = (k: number): Anthropic.Beta.BetaThinkingBlockParam => ({
    type: 'thinking',
    thinking: thought(k),
    signature: signThinking(thought(k)),
  });
  const messages: Anthropic.Beta.BetaMessageParam[] = [
    { role: 'user', content: 'First question.' },
    { role: 'assistant', content: [thinking(1), { type: 'text', text: 'First answer.' }] },
    { role: 'user', content: 'Second question.' },
    { role: 'assistant', content: [thinking(2), { type: 'text', text: 'Second answer.' }] },
    { role: 'user', content: 'Third question.' },
    {
      role: 'assistant',
      content: [thinking(3), { type: 'tool_use', id: 'toolu_t', name: 'read_file', input: { path: 'a.ts' } }],
    },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_t', content: 'export const a = 1;' }] },
  ];
  const create = (f: FakeProvider, keep: Anthropic.Beta.BetaClearThinking20251015Edit['keep']) =>
    client(f).beta.messages.create({
      model: MODEL,
      max_tokens: 4000,
      thinking: { type: 'enabled', budget_tokens: 2000 },
      betas,
      tools,
      messages,
      context_management: { edits: [{ type: 'clear_thinking_20251015', ...(keep === undefined ? {} : { keep }) }] },
    });

  it('keeps the thinking of the last `keep` assistant turns (default 1) and bills accordingly', async () => {
    const f = await fake();
    const all = await create(f, 'all');
    expect(all.context_management?.applied_edits).toEqual([]);
    const everything = all.usage.input_tokens;

    const one = await create(f, undefined);
    const plain = await client(f).beta.messages.countTokens({ model: MODEL, tools, messages });
    // Keeping one turn is what the API does without the edit: the same bill.
    expect(one.usage.input_tokens).toBe(plain.input_tokens);
    expect(one.context_management?.applied_edits).toEqual([
      {
        type: 'clear_thinking_20251015',
        cleared_thinking_turns: 2,
        cleared_input_tokens: everything - plain.input_tokens,
      },
    ]);

    const two = await create(f, { type: 'thinking_turns', value: 2 });
    const applied = two.context_management!.applied_edits[0] as Anthropic.Beta.BetaClearThinking20251015EditResponse;
    expect(applied.cleared_thinking_turns).toBe(1);
    expect(two.usage.input_tokens).toBe(everything - applied.cleared_input_tokens);
    expect(two.usage.input_tokens).toBeGreaterThan(one.usage.input_tokens);
    expect(two.usage.input_tokens).toBeLessThan(everything);
  });
});

describe('context_management refusals', () => {
  const messages = conversation(['read_file']);
  const cases: [string, unknown, string][] = [
    [
      'an unknown edit type',
      { edits: [{ type: 'clear_everything' }] },
      "context_management.edits.0: Input tag 'clear_everything' found using 'type' does not match any of the expected tags: 'clear_tool_uses_20250919', 'clear_thinking_20251015'",
    ],
    [
      'a bad trigger type',
      { edits: [{ type: 'clear_tool_uses_20250919', trigger: { type: 'messages', value: 3 } }] },
      "context_management.edits.0.clear_tool_uses_20250919.trigger: Input tag 'messages' found using 'type' does not match any of the expected tags: 'input_tokens', 'tool_uses'",
    ],
    [
      'a non-integer keep',
      { edits: [{ type: 'clear_tool_uses_20250919', keep: { type: 'tool_uses', value: 'three' } }] },
      'context_management.edits.0.clear_tool_uses_20250919.keep.tool_uses.value: Input should be a valid integer',
    ],
    [
      'a negative clear_at_least',
      { edits: [{ type: 'clear_tool_uses_20250919', clear_at_least: { type: 'input_tokens', value: -1 } }] },
      'context_management.edits.0.clear_tool_uses_20250919.clear_at_least.input_tokens.value: Input should be greater than or equal to 0',
    ],
    [
      'an unknown edit field',
      { edits: [{ type: 'clear_tool_uses_20250919', placeholder: 'x' }] },
      'context_management.edits.0.clear_tool_uses_20250919.placeholder: Extra inputs are not permitted',
    ],
    [
      'clear_thinking not first',
      { edits: [{ type: 'clear_tool_uses_20250919' }, { type: 'clear_thinking_20251015' }] },
      'context_management.edits: `clear_thinking_20251015` must be the first edit in `edits` when combined with other edits',
    ],
  ];
  for (const [what, cm, message] of cases) {
    it(`refuses ${what} with 400`, async () => {
      const f = await fake();
      const err = await client(f)
        .beta.messages.create({
          model: MODEL,
          max_tokens: 1000,
          betas,
          tools,
          messages,
          context_management: cm as Anthropic.Beta.BetaContextManagementConfig,
        })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Anthropic.BadRequestError);
      expect((err as InstanceType<typeof Anthropic.BadRequestError>).message).toContain(message);
      expect(f.requests.at(-1)!.refused?.message).toBe(message);
    });
  }

  it('refuses context_management without the beta header', async () => {
    const f = await fake();
    const err = await client(f)
      .beta.messages.create({
        model: MODEL,
        max_tokens: 1000,
        tools,
        messages,
        context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] },
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(f.requests.at(-1)!.refused?.message).toBe('context_management: Extra inputs are not permitted');
    expect(f.requests.at(-1)!.headers['anthropic-beta']).toBeUndefined();
  });
});

describe('Anthropic compact_20260112', () => {
  const cbetas = [COMPACTION_BETA];
  const big = (k: number) => `Part ${k} of the brief. ` + 'lorem ipsum dolor sit amet '.repeat(6000);
  const long: Anthropic.Beta.BetaMessageParam[] = [
    { role: 'user', content: big(1) },
    { role: 'assistant', content: 'Noted.' },
    { role: 'user', content: big(2) },
  ];
  const compact = (f: FakeProvider, value: number, pause = false) =>
    client(f).beta.messages.create({
      model: MODEL,
      max_tokens: 1000,
      betas: cbetas,
      messages: long,
      context_management: {
        edits: [{ type: 'compact_20260112', trigger: { type: 'input_tokens', value }, pause_after_compaction: pause }],
      },
    });

  it('compacts at its threshold and not below, and a compaction block sent back replaces what came before it', async () => {
    const f = await fake();
    const full = (await client(f).beta.messages.countTokens({ model: MODEL, messages: long })).input_tokens;
    expect(full).toBeGreaterThan(50_000);

    const below = await compact(f, full + 1);
    expect(below.content.map((b) => b.type)).toEqual(['text']);
    expect(below.usage.input_tokens).toBe(full);
    expect(below.usage.iterations ?? null).toBeNull();
    expect(f.requests.at(-1)!.compacted).toBeUndefined();

    const at = await compact(f, full);
    expect(at.content.map((b) => b.type)).toEqual(['compaction', 'text']);
    expect(at.stop_reason).toBe('end_turn');
    const block = at.content[0] as Anthropic.Beta.BetaCompactionBlock;
    expect(block.content).toMatch(/^<summary>/);
    const iterations = at.usage.iterations!;
    expect(iterations.map((i) => i.type)).toEqual(['compaction', 'message']);
    expect(iterations[0]!.input_tokens).toBe(full);
    expect(iterations[1]!.input_tokens).toBe(at.usage.input_tokens);
    expect(at.usage.input_tokens).toBeLessThan(full / 20);
    expect(f.requests.at(-1)!).toMatchObject({ compacted: true, originalPromptTokens: full });
    expect(at.context_management).toEqual({ applied_edits: [] });

    // Sent back: the whole history before the block is dropped from the bill.
    const resend = (history: Anthropic.Beta.BetaMessageParam[]) =>
      client(f).beta.messages.create({
        model: MODEL,
        max_tokens: 1000,
        betas: cbetas,
        messages: [...history, { role: 'assistant', content: at.content }, { role: 'user', content: 'Continue.' }],
      });
    const withHistory = await resend(long);
    const without = await resend([{ role: 'user', content: 'Hi.' }]);
    expect(withHistory.usage.input_tokens).toBe(without.usage.input_tokens);
    expect(withHistory.usage.input_tokens).toBeLessThan(full / 20);
    expect(withHistory.usage.input_tokens).toBeGreaterThan(at.usage.input_tokens);
  });

  it('pauses after compaction with stop_reason "compaction", and streams the block', async () => {
    const f = await fake();
    const paused = await compact(f, 50_000, true);
    expect(paused.stop_reason).toBe('compaction');
    expect(paused.content.map((b) => b.type)).toEqual(['compaction']);
    expect(paused.usage.iterations!.map((i) => i.type)).toEqual(['compaction']);

    const stream = client(f).beta.messages.stream({
      model: MODEL,
      max_tokens: 1000,
      betas: cbetas,
      messages: long,
      context_management: { edits: [{ type: 'compact_20260112', trigger: { type: 'input_tokens', value: 50_000 } }] },
    });
    const final = await stream.finalMessage();
    expect(final.content.map((b) => b.type)).toEqual(['compaction', 'text']);
    expect((final.content[0] as Anthropic.Beta.BetaCompactionBlock).content).toBe(
      (paused.content[0] as Anthropic.Beta.BetaCompactionBlock).content,
    );
    expect(final.usage.iterations!.map((i) => i.type)).toEqual(['compaction', 'message']);
  });

  it('refuses a trigger under 50,000, the edit without its beta, and compaction blocks without the beta', async () => {
    const f = await fake();
    const refused = async (p: Promise<unknown>) => {
      const err = await p.catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Anthropic.BadRequestError);
      return f.requests.at(-1)!.refused!.message;
    };
    expect(await refused(compact(f, 49_999))).toBe(
      'context_management.edits.0.compact_20260112.trigger.input_tokens.value: Input should be greater than or equal to 50000',
    );
    expect(
      await refused(
        client(f).beta.messages.create({
          model: MODEL,
          max_tokens: 1000,
          betas,
          messages: long,
          context_management: { edits: [{ type: 'compact_20260112' }] },
        }),
      ),
    ).toContain("Input tag 'compact_20260112' found using 'type' does not match any of the expected tags");
    expect(
      await refused(
        client(f).beta.messages.create({
          model: MODEL,
          max_tokens: 1000,
          messages: [
            { role: 'user', content: 'Hi.' },
            { role: 'assistant', content: [{ type: 'compaction', content: 'A summary.' }] },
            { role: 'user', content: 'Continue.' },
          ],
        }),
      ),
    ).toContain("Input tag 'compaction' found using 'type' does not match any of the expected tags");
  });
});

describe('OpenAI Responses compaction', () => {
  const openai = (f: FakeProvider) => new OpenAI({ baseURL: f.v1URL, apiKey: 'sk-test', maxRetries: 0 });
  const GPT = 'gpt-5';
  const input: OpenAI.Responses.ResponseInputItem[] = [
    { role: 'user', content: 'Part one. ' + 'lorem ipsum dolor sit amet '.repeat(800) },
    { role: 'assistant', content: 'Noted.' },
    { role: 'user', content: 'Part two. ' + 'lorem ipsum dolor sit amet '.repeat(800) },
  ];
  const asInput = (items: OpenAI.Responses.ResponseOutputItem[]) =>
    items as unknown as OpenAI.Responses.ResponseInputItem[];

  it('compacts at compact_threshold and not below; the compaction item sent back replaces what came before it', async () => {
    const f = await fake();
    const plain = await openai(f).responses.create({ model: GPT, input, store: false });
    const full = plain.usage!.input_tokens;
    const create = (threshold: number) =>
      openai(f).responses.create({
        model: GPT,
        input,
        context_management: [{ type: 'compaction', compact_threshold: threshold }],
      });
    const below = await create(full + 1);
    expect(below.output.map((o) => o.type)).toEqual(['message']);
    expect(below.usage!.input_tokens).toBe(full);

    const at = await create(full);
    expect(at.output.map((o) => o.type)).toEqual(['compaction', 'message']);
    const item = at.output[0] as OpenAI.Responses.ResponseCompactionItem;
    expect(item.id).toMatch(/^cmp_/);
    expect(typeof item.encrypted_content).toBe('string');
    expect(at.usage!.input_tokens).toBeLessThan(full / 10);
    expect(f.requests.at(-1)!).toMatchObject({ compacted: true, originalPromptTokens: full });

    // Stateless chaining: the items before the compaction item are not billed, whether sent or pruned.
    const next = (history: OpenAI.Responses.ResponseInputItem[]) =>
      openai(f).responses.create({
        model: GPT,
        store: false,
        input: [...history, { role: 'user', content: 'Continue.' }],
      });
    const withHistory = await next([...input, ...asInput(at.output)]);
    const pruned = await next(asInput(at.output));
    expect(withHistory.usage!.input_tokens).toBe(pruned.usage!.input_tokens);
    expect(withHistory.usage!.input_tokens).toBeLessThan(full / 10);
    // previous_response_id chaining (the compacting response was stored): the same bill.
    const chained = await openai(f).responses.create({ model: GPT, previous_response_id: at.id, input: 'Continue.' });
    expect(chained.usage!.input_tokens).toBe(pruned.usage!.input_tokens);
  });

  it('streams the compaction item', async () => {
    const f = await fake();
    const stream = openai(f).responses.stream({
      model: GPT,
      input,
      context_management: [{ type: 'compaction', compact_threshold: 1000 }],
    });
    const final = await stream.finalResponse();
    expect(final.output.map((o) => o.type)).toEqual(['compaction', 'message']);
  });

  it('responses.compact returns the user messages and one compaction item', async () => {
    const f = await fake();
    const compacted = await openai(f).responses.compact({ model: GPT, input });
    expect(compacted.object).toBe('response.compaction');
    expect(compacted.output.map((o) => o.type)).toEqual(['message', 'message', 'compaction']);
    expect(compacted.output.slice(0, 2).map((o) => (o as OpenAI.Responses.ResponseOutputMessage).role)).toEqual([
      'user',
      'user',
    ]);
    expect(compacted.usage.input_tokens).toBe(f.requests.at(-1)!.promptTokens);
    const next = await openai(f).responses.create({
      model: GPT,
      store: false,
      input: [...asInput(compacted.output), { role: 'user', content: 'Continue.' }],
    });
    expect(next.usage!.input_tokens).toBeLessThan(compacted.usage.input_tokens / 10);
  });

  const refusals: [string, unknown, string][] = [
    ['not a list', { type: 'compaction' }, "Invalid type for 'context_management': expected an array of objects."],
    ['an unknown type', [{ type: 'truncate' }], "Invalid value: 'truncate'. Supported values are: 'compaction'."],
    ['an unknown key', [{ type: 'compaction', threshold: 5 }], "Unknown parameter: 'context_management[0].threshold'."],
    [
      'a non-integer threshold',
      [{ type: 'compaction', compact_threshold: 'high' }],
      "Invalid type for 'context_management[0].compact_threshold': expected an integer.",
    ],
  ];
  for (const [what, cm, message] of refusals) {
    it(`refuses context_management ${what}`, async () => {
      const f = await fake();
      const err = await openai(f)
        .responses.create({
          model: GPT,
          input: 'Hi.',
          context_management: cm as OpenAI.Responses.ResponseCreateParams['context_management'],
        })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect(f.requests.at(-1)!.refused?.message).toBe(message);
    });
  }
});
