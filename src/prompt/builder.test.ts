import { describe, expect, it } from 'vitest';
import { AbridgeError } from '../errors.js';
import type { Message } from '../model/types.js';
import { TokenCounter } from '../tokens/counter.js';
import type { ExactTokenizer } from '../tokens/exact.js';
import {
  MAX_CACHE_BREAKPOINTS,
  minCacheableTokens,
  PromptBuilder,
  type BuildOptions,
  type PromptSection,
} from './builder.js';

/** One token per word: every figure below is exact. */
const words: ExactTokenizer = { encoding: 'words', count: (t) => t.split(/\s+/).filter(Boolean).length };
const text = (n: number, w = 'w') => Array.from({ length: n }, () => w).join(' ');
const exact = (o: BuildOptions): BuildOptions => ({
  counter: new TokenCounter({ family: 'claude', exact: words }),
  ratio: 1,
  ...o,
});
const markers = (x: unknown) => (JSON.stringify(x).match(/"cache_control"/g) ?? []).length;

function standard(): PromptBuilder {
  return new PromptBuilder([
    { name: 'base', content: text(600, 'base'), cacheable: true },
    { name: 'rules', content: text(300, 'rule'), cacheable: true },
    { name: 'memories', content: text(100, 'mem'), cacheable: true },
    { name: 'skills', content: text(100, 'skill'), cacheable: true },
    { name: 'scratchpad', content: text(20, 'note'), cacheable: false },
  ]);
}

const conversation: Message[] = [
  { role: 'user', parts: [{ type: 'text', text: text(400, 'ask') }] },
  {
    role: 'assistant',
    parts: [
      { type: 'text', text: 'reading' },
      { type: 'tool-call', id: 'call_1', name: 'read', arguments: { path: 'a.ts' } },
    ],
  },
  {
    role: 'tool',
    parts: [
      {
        type: 'tool-result',
        callId: 'call_1',
        toolName: 'read',
        content: [{ type: 'text', text: text(500, 'code') }],
        isError: false,
      },
    ],
  },
  { role: 'assistant', parts: [{ type: 'text', text: 'done' }] },
  { role: 'user', parts: [{ type: 'text', text: 'next step please' }] },
];

const tools = [
  { name: 'read', description: text(300, 'd'), input_schema: { type: 'object' } },
  { name: 'write', description: text(300, 'd'), input_schema: { type: 'object' } },
  { name: 'search', description: text(500, 'd'), input_schema: { type: 'object' } },
  { name: 'rare', description: text(50, 'd'), input_schema: { type: 'object' }, defer_loading: true },
];

describe('PromptBuilder for Anthropic', () => {
  it('marks the end of the last cacheable section, and keeps the dynamic part after it', () => {
    const built = standard()
      .contextStatus(0.83)
      .build(exact({ provider: 'anthropic', model: 'claude-sonnet-4-5' }));
    expect(built.caching).toBe('explicit');
    expect(built.blocks.map((b) => b.name)).toEqual([
      'base',
      'rules',
      'memories',
      'skills',
      'scratchpad',
      'context-status',
    ]);
    expect(built.breakpoints).toEqual([{ at: 'system', index: 3, section: 'skills', prefixTokens: 1100 }]);
    expect(built.blocks.map((b) => b.cache_control !== undefined)).toEqual([false, false, false, true, false, false]);
    expect(built.anthropic!.system[3]).toEqual({
      type: 'text',
      text: text(100, 'skill'),
      cache_control: { type: 'ephemeral' },
    });
    expect(markers(built.anthropic)).toBe(1);
    expect(built.stablePrefixTokens).toBe(1100);
    expect(
      built.system.endsWith(
        '[Context: 83% used. You can call compact_context to free space before continuing with large operations.]',
      ),
    ).toBe(true);
    expect(built.system.startsWith('base base')).toBe(true);
    expect(built.skipped).toEqual([]);
  });

  it('respects each model’s minimum cacheable length', () => {
    expect(minCacheableTokens('claude-sonnet-4-5')).toBe(1024);
    expect(minCacheableTokens('claude-opus-4-1')).toBe(1024);
    expect(minCacheableTokens('claude-3-5-haiku-20241022')).toBe(2048);
    expect(minCacheableTokens('claude-haiku-4-5')).toBe(4096);
    const sized = (n: number) => new PromptBuilder([{ name: 'base', content: text(n), cacheable: true }]);
    // Exactly the minimum is cached; one token less is not.
    expect(sized(1024).build(exact({ provider: 'anthropic', model: 'claude-sonnet-4-5' })).breakpoints).toHaveLength(1);
    expect(sized(1023).build(exact({ provider: 'anthropic', model: 'claude-sonnet-4-5' })).breakpoints).toHaveLength(0);
    // 1,500 tokens: enough for Sonnet, not for Haiku 3.5.
    expect(sized(1500).build(exact({ provider: 'anthropic', model: 'claude-sonnet-4-5' })).breakpoints).toHaveLength(1);
    const haiku = sized(1500).build(exact({ provider: 'anthropic', model: 'claude-3-5-haiku-20241022' }));
    expect(haiku.breakpoints).toEqual([]);
    expect(haiku.minCacheableTokens).toBe(2048);
    expect(haiku.skipped).toEqual([
      { at: 'system', reason: expect.stringContaining('1,500 tokens, under the 2,048-token minimum') },
    ]);
    expect(markers(haiku.anthropic)).toBe(0);
  });

  it('places no breakpoint on a prefix too short, and says why', () => {
    const built = new PromptBuilder([
      { name: 'base', content: text(300), cacheable: true },
      { name: 'scratchpad', content: 'todo', cacheable: false },
    ]).build(exact({ provider: 'anthropic', model: 'claude-opus-4-1' }));
    expect(built.breakpoints).toEqual([]);
    expect(built.skipped).toHaveLength(1);
    expect(built.skipped[0]!.reason).toBe(
      'the cacheable prefix (cacheable sections) is 300 tokens, under the 1,024-token minimum cacheable length of claude-opus-4-1: Anthropic would not cache it',
    );
    expect(markers(built)).toBe(0);
  });

  it('says so when nothing is cacheable', () => {
    const built = new PromptBuilder([{ name: 'scratchpad', content: text(2000), cacheable: false }]).build(
      exact({ provider: 'anthropic' }),
    );
    expect(built.breakpoints).toEqual([]);
    expect(built.skipped[0]!.reason).toMatch(/no cacheable section/);
  });

  it('adds breakpoints after the tools and at the end of the conversation: never more than 4, all on the stable prefix', () => {
    const built = standard()
      .contextStatus(0.85)
      .build(
        exact({
          provider: 'anthropic',
          model: 'claude-sonnet-4-5',
          tools,
          messages: conversation,
          dynamicPlacement: 'after-conversation',
        }),
      );
    expect(built.breakpoints.map((b) => b.at)).toEqual(['tools', 'system', 'messages']);
    expect(built.breakpoints.length).toBeLessThanOrEqual(MAX_CACHE_BREAKPOINTS);
    expect(markers(built.anthropic)).toBe(3);
    // Prefixes grow in request order: tools → system → messages.
    const [t, s, m] = built.breakpoints.map((b) => b.prefixTokens);
    expect(t).toBeGreaterThanOrEqual(1024);
    expect(s).toBe(t! + 1100);
    expect(m).toBeGreaterThan(s!);
    // The tools marker is on the last tool in the prompt (the deferred one is not).
    expect(built.breakpoints[0]!.index).toBe(2);
    expect(built.anthropic!.tools![2]).toHaveProperty('cache_control', { type: 'ephemeral' });
    expect(built.anthropic!.tools![3]).not.toHaveProperty('cache_control');
    // The conversation marker is on the last block of the last message; the dynamic sections come after it.
    const messages = built.anthropic!.messages!;
    const last = messages[messages.length - 1]!;
    expect(last.role).toBe('user');
    const marked = last.content.findIndex((b) => b.cache_control !== undefined);
    expect(last.content[marked]).toMatchObject({ type: 'text', text: 'next step please' });
    expect(last.content.slice(marked + 1).map((b) => (b.type === 'text' ? b.text : b.type))).toEqual([
      text(20, 'note'),
      expect.stringMatching(/^\[Context: 85% used/),
    ]);
    expect(built.system).not.toMatch(/Context:/);
    expect(built.tail).toEqual([]);
    expect(built.warnings).toEqual([]);
    // Nothing non-cacheable lies before the last marker: the system blocks carry only cacheable sections.
    expect(built.blocks.every((b) => b.cacheable)).toBe(true);
  });

  it('keeps within 4 with breakpoints the caller reserves, dropping the least useful first', () => {
    const built = standard().build(
      exact({
        provider: 'anthropic',
        model: 'claude-sonnet-4-5',
        tools,
        messages: conversation,
        reservedBreakpoints: 2,
      }),
    );
    expect(built.breakpoints.map((b) => b.at)).toEqual(['system', 'messages']);
    expect(built.skipped).toEqual([
      { at: 'tools', reason: 'no breakpoint left (at most 4 per request, 2 reserved by the caller)' },
    ]);
    expect(markers(built.anthropic) + 2).toBeLessThanOrEqual(MAX_CACHE_BREAKPOINTS);
  });

  it('warns when dynamic sections sit before a cached conversation', () => {
    const built = standard().build(
      exact({ provider: 'anthropic', model: 'claude-sonnet-4-5', messages: conversation }),
    );
    expect(built.breakpoints.map((b) => b.at)).toEqual(['system', 'messages']);
    expect(built.warnings).toEqual([expect.stringContaining('"scratchpad" sits before the conversation')]);
  });

  it('skips a tools breakpoint on too few tool tokens', () => {
    const built = standard().build(
      exact({ provider: 'anthropic', model: 'claude-sonnet-4-5', tools: tools.slice(0, 1) }),
    );
    expect(built.breakpoints.map((b) => b.at)).toEqual(['system']);
    expect(built.skipped[0]).toMatchObject({ at: 'tools', reason: expect.stringContaining('the tool definitions is') });
    expect(built.breakpoints[0]!.prefixTokens).toBeGreaterThan(1100); // the tools precede the system prompt
  });
});

describe('PromptBuilder for OpenAI and Gemini', () => {
  for (const provider of ['openai', 'gemini'] as const) {
    it(`${provider}: no markers, the same static → dynamic order`, () => {
      const built = standard()
        .contextStatus(0.9)
        .build(exact({ provider, tools, messages: conversation }));
      expect(built.caching).toBe('automatic');
      expect(built.breakpoints).toEqual([]);
      expect(built.skipped).toEqual([]);
      expect(built.anthropic).toBeUndefined();
      expect(markers(built)).toBe(0);
      expect(built.blocks.map((b) => [b.name, b.cacheable])).toEqual([
        ['base', true],
        ['rules', true],
        ['memories', true],
        ['skills', true],
        ['scratchpad', false],
        ['context-status', false],
      ]);
      expect(built.system).toBe(built.blocks.map((b) => b.text).join('\n\n'));
    });
  }
});

describe('section ordering', () => {
  it('rejects a cacheable section after a non-cacheable one, naming both', () => {
    const b = new PromptBuilder([
      { name: 'base', content: 'x', cacheable: true },
      { name: 'scratchpad', content: 'y', cacheable: false },
    ]);
    let error: unknown;
    try {
      b.add({ name: 'skills', content: 'z', cacheable: true });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(AbridgeError);
    expect((error as AbridgeError).code).toBe('INVALID_INPUT');
    expect((error as AbridgeError).message).toMatch(
      /"skills" is cacheable but would follow the non-cacheable section "scratchpad"/,
    );
    expect(b.sections.map((s) => s.name)).toEqual(['base', 'scratchpad']);
  });

  it("reorders instead with order: 'reorder', and warns", () => {
    const sections: PromptSection[] = [
      { name: 'base', content: text(1200), cacheable: true },
      { name: 'scratchpad', content: 'todo', cacheable: false },
      { name: 'skills', content: 'skill text', cacheable: true },
    ];
    const built = new PromptBuilder(sections, { order: 'reorder' }).build(exact({ provider: 'anthropic' }));
    expect(built.blocks.map((b) => b.name)).toEqual(['base', 'skills', 'scratchpad']);
    expect(built.breakpoints).toEqual([{ at: 'system', index: 1, section: 'skills', prefixTokens: 1202 }]);
    expect(built.warnings).toEqual([
      'moved cacheable section "skills" ahead of non-cacheable "scratchpad", so that the cached prefix does not include changing text',
    ]);
  });

  it('keeps the context note last, and shows it only from 80%', () => {
    const b = new PromptBuilder([
      { name: 'base', content: 'x', cacheable: true },
      { name: 'scratchpad', content: 'y', cacheable: false },
    ]);
    expect(
      b
        .contextStatus(0.79)
        .build({ provider: 'openai' })
        .blocks.map((x) => x.name),
    ).toEqual(['base', 'scratchpad']);
    expect(
      b
        .contextStatus(0.8)
        .build({ provider: 'openai' })
        .blocks.map((x) => x.name),
    ).toEqual(['base', 'scratchpad', 'context-status']);
    expect(
      b
        .contextStatus(undefined)
        .build({ provider: 'openai' })
        .blocks.map((x) => x.name),
    ).toEqual(['base', 'scratchpad']);
  });

  it('refuses duplicate names and the note’s own name; set() changes content in place', () => {
    const b = standard();
    expect(() => b.add({ name: 'rules', content: 'again', cacheable: true })).toThrow(/already in the prompt/);
    expect(() => b.add({ name: 'context-status', content: 'x', cacheable: false })).toThrow(/contextStatus\(\)/);
    b.set('scratchpad', 'new plan');
    expect(b.build({ provider: 'gemini' }).blocks.at(-1)).toMatchObject({ name: 'scratchpad', text: 'new plan' });
    expect(() => b.set('nope', 'x')).toThrow(/no section "nope"/);
  });

  it('leaves empty sections out', () => {
    const built = new PromptBuilder([
      { name: 'base', content: 'hello', cacheable: true },
      { name: 'memories', content: '  ', cacheable: true },
    ]).build({ provider: 'anthropic' });
    expect(built.blocks.map((b) => b.name)).toEqual(['base']);
  });
});
