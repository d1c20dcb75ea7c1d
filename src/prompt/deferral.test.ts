import { describe, expect, it } from 'vitest';
import { ContextBudget } from '../budget/budget.js';
import type { ModelInfo } from '../budget/catalog.js';
import { DEFAULT_BUDGET_SETTINGS } from '../budget/defaults.js';
import { TokenCounter } from '../tokens/counter.js';
import { DeferralManager, definitionTokens, type DeferrableTool, type ToolKind } from './deferral.js';
import { parameterNames, searchDeferredTools, searchTerms, toolSearchTool } from '../tools/tool-search.js';

/** A counter whose token is a whitespace-separated word: a definition costs exactly its description's word count. */
const words = new TokenCounter({ exact: { encoding: 'words', count: (t) => t.split(/\s+/).filter(Boolean).length } });
const text = (n: number, tag = 'w') => Array.from({ length: n }, (_, i) => `${tag}${i}`).join(' ');
const EMPTY_SCHEMA = { type: 'object', properties: {} };

function tool(name: string, kind: ToolKind, tokens: number, server?: string): DeferrableTool {
  return { name, kind, description: text(tokens), inputSchema: EMPTY_SCHEMA, ...(server ? { server } : {}) };
}

/** 2 built-ins, 3 MCP tools, 2 skills: 100 tokens each, 700 in all. */
function fixture(): DeferrableTool[] {
  return [
    tool('Read', 'builtin', 100),
    tool('mcp__a__one', 'mcp', 100, 'a'),
    tool('skill_x', 'skill', 100),
    tool('mcp__a__two', 'mcp', 100, 'a'),
    tool('Bash', 'builtin', 100),
    tool('mcp__b__three', 'mcp', 100, 'b'),
    tool('skill_y', 'skill', 100),
  ];
}

const names = (tools: readonly DeferrableTool[]) => tools.map((t) => t.name);

/** A clock the test moves by hand. */
function clock(start = 1_000) {
  let t = start;
  return { now: () => t, set: (v: number) => void (t = v) };
}

describe('DeferralManager: what is deferred, in which order', () => {
  it('the word counter prices a definition at its description length (the arithmetic below relies on it)', () => {
    const m = new DeferralManager({ tools: fixture(), counter: words, effectiveWindow: 100_000 });
    expect(m.tokensOf('mcp__a__one')).toBe(100);
    expect(m.report().tokensBefore).toBe(700);
  });

  it('defers nothing while the definitions fit under threshold × effective window', () => {
    const m = new DeferralManager({ tools: fixture(), counter: words, effectiveWindow: 10_000 });
    expect(m.limit).toBe(1_000);
    expect(m.deferredTools()).toEqual([]);
    expect(names(m.activeTools())).toEqual([
      'Read',
      'mcp__a__one',
      'skill_x',
      'mcp__a__two',
      'Bash',
      'mcp__b__three',
      'skill_y',
    ]);
    expect(m.note()).toBe('');
  });

  it('defers MCP tools before skill tools, never-used in registration order, and stops once under the limit', () => {
    const m = new DeferralManager({ tools: fixture(), counter: words, effectiveWindow: 6_000 }); // limit 600: 1 to go
    expect(names(m.deferredTools())).toEqual(['mcp__a__one']);
    m.setEffectiveWindow(4_000); // limit 400: 3 to go, all MCP
    expect(names(m.deferredTools())).toEqual(['mcp__a__one', 'mcp__a__two', 'mcp__b__three']);
    m.setEffectiveWindow(3_000); // limit 300: all MCP, then the first skill
    expect(names(m.deferredTools())).toEqual(['mcp__a__one', 'skill_x', 'mcp__a__two', 'mcp__b__three']);
    expect(names(m.activeTools())).toEqual(['Read', 'Bash', 'skill_y']);
  });

  it('within a category, the least recently used goes first; never used counts as oldest', () => {
    const c = clock();
    const m = new DeferralManager({ tools: fixture(), counter: words, effectiveWindow: 100_000, now: c.now });
    c.set(2_000);
    expect(m.markUsed('mcp__a__one')).toBe(true);
    c.set(3_000);
    m.markUsed('mcp__b__three');
    c.set(4_000);
    m.markUsed('skill_x');
    expect(m.markUsed('nope')).toBe(false);

    m.setEffectiveWindow(6_000); // 1 to go: the never-used MCP tool
    expect(names(m.deferredTools())).toEqual(['mcp__a__two']);
    m.setEffectiveWindow(5_000); // 2 to go: then the one used at 2_000
    expect(names(m.deferredTools())).toEqual(['mcp__a__one', 'mcp__a__two']);
    m.setEffectiveWindow(4_000); // 3: all MCP; skills untouched
    expect(names(m.deferredTools())).toEqual(['mcp__a__one', 'mcp__a__two', 'mcp__b__three']);
    m.setEffectiveWindow(3_000); // 4: the never-used skill before skill_x (used at 4_000)
    expect(names(m.deferredTools())).toEqual(['mcp__a__one', 'mcp__a__two', 'mcp__b__three', 'skill_y']);
  });

  it('use at the same instant ties, and ties go by registration order', () => {
    const m = new DeferralManager({ tools: fixture(), counter: words, effectiveWindow: 100_000, now: () => 5 });
    m.markUsed('mcp__a__two');
    m.markUsed('mcp__a__one');
    m.markUsed('mcp__b__three');
    m.setEffectiveWindow(6_000);
    expect(names(m.deferredTools())).toEqual(['mcp__a__one']);
  });

  it('use re-ranks at the next recompute, not on markUsed itself (the tool list stays stable mid-turn)', () => {
    const c = clock();
    const m = new DeferralManager({ tools: fixture(), counter: words, effectiveWindow: 6_000, now: c.now });
    expect(names(m.deferredTools())).toEqual(['mcp__a__one']);
    m.markUsed('mcp__a__one');
    expect(names(m.deferredTools())).toEqual(['mcp__a__one']);
    m.recompute();
    expect(names(m.deferredTools())).toEqual(['mcp__a__two']);
  });

  it('never defers built-ins, even when they alone exceed the limit', () => {
    const m = new DeferralManager({ tools: fixture(), counter: words, effectiveWindow: 1_000 }); // limit 100 < 200 of built-ins
    expect(names(m.activeTools())).toEqual(['Read', 'Bash']);
    expect(m.deferredTools()).toHaveLength(5);
    const r = m.report();
    expect(r.overLimit).toBe(true);
    expect(r.tokensAfter).toBe(200);
    expect(r.byKind.builtin).toEqual({ tools: 2, deferred: 0, tokens: 200, deferredTokens: 0 });
  });
});

describe('DeferralManager: the threshold boundary', () => {
  it('exactly at the threshold nothing is deferred; one token over defers', () => {
    const at = new DeferralManager({ tools: fixture(), counter: words, effectiveWindow: 7_000 }); // limit 700 = total
    expect(at.limit).toBe(700);
    expect(at.deferredTools()).toEqual([]);
    const over = new DeferralManager({ tools: fixture(), counter: words, effectiveWindow: 6_990 }); // limit 699: 1 over
    expect(over.limit).toBe(699);
    expect(names(over.deferredTools())).toEqual(['mcp__a__one']);
    expect(over.report().tokensAfter).toBe(600);
  });

  it('the same with a custom threshold, and adding one token to a definition tips it over', () => {
    const m = new DeferralManager({ tools: fixture(), counter: words, effectiveWindow: 1_400, threshold: 0.5 });
    expect(m.limit).toBe(700);
    expect(m.deferredTools()).toEqual([]);
    m.addTools([tool('skill_y', 'skill', 101)]); // replaced in place: 701 tokens
    expect(m.report().tokensBefore).toBe(701);
    expect(names(m.deferredTools())).toEqual(['mcp__a__one']);
  });

  it('share × window float noise does not move the boundary (0.29 × 100 is 28.999999999999996)', () => {
    const m = new DeferralManager({
      tools: [tool('mcp__s__t', 'mcp', 29, 's')],
      counter: words,
      effectiveWindow: 100,
      threshold: 0.29,
    });
    expect(m.limit).toBe(29);
    expect(m.deferredTools()).toEqual([]);
  });

  it('takes the effective window from a ContextBudget (window less the response reserve)', () => {
    const model: ModelInfo = {
      id: 'm',
      contextWindow: 200_000,
      maxOutputTokens: 32_000,
      family: 'other',
      source: 'config',
    };
    const budget = new ContextBudget(model, DEFAULT_BUDGET_SETTINGS);
    expect(budget.effective).toBe(168_000);
    const m = new DeferralManager({ tools: fixture(), counter: words, budget });
    expect(m.effectiveWindow).toBe(168_000);
    expect(m.limit).toBe(16_800);
    const small = new ContextBudget(
      { ...model, contextWindow: 8_000, maxOutputTokens: 1_000 },
      DEFAULT_BUDGET_SETTINGS,
    );
    m.setBudget(small); // effective 7_000: limit 700, all fits
    expect(m.limit).toBe(700);
    expect(m.deferredTools()).toEqual([]);
    m.setBudget(new ContextBudget({ ...model, contextWindow: 6_000, maxOutputTokens: 1_000 }, DEFAULT_BUDGET_SETTINGS)); // limit 500
    expect(names(m.deferredTools())).toEqual(['mcp__a__one', 'mcp__a__two']);
  });

  it('rejects a bad threshold or window', () => {
    expect(() => new DeferralManager({ tools: [], counter: words, effectiveWindow: -1 })).toThrow(/effective window/);
    expect(
      () => new DeferralManager({ tools: [], counter: words, effectiveWindow: 100, threshold: Number.NaN }),
    ).toThrow(/threshold/);
    expect(
      () =>
        new DeferralManager({
          tools: [tool('x', 'mcp', 1), tool('x', 'mcp', 1)],
          counter: words,
          effectiveWindow: 100,
        }),
    ).toThrow(/duplicate/);
  });

  it('prices a definition as its Anthropic-style JSON with the real counter', () => {
    const real = new TokenCounter();
    const t: DeferrableTool = {
      name: 'mcp__github__create_issue',
      kind: 'mcp',
      server: 'github',
      description: 'Create a new issue.',
      inputSchema: { type: 'object', properties: { owner: { type: 'string' } } },
    };
    const m = new DeferralManager({ tools: [t], counter: real, effectiveWindow: 100_000 });
    const expected = real.text(
      JSON.stringify({ name: t.name, description: t.description, input_schema: t.inputSchema }),
    );
    expect(expected).toBeGreaterThan(10);
    expect(m.tokensOf(t.name)).toBe(expected);
    expect(definitionTokens(t, real)).toBe(expected);
  });
});

describe('DeferralManager: note, promotion, recompute, report', () => {
  it('the note counts deferred tools, singular for one, empty for none', () => {
    const m = new DeferralManager({ tools: fixture(), counter: words, effectiveWindow: 4_000 });
    expect(m.note()).toBe('[3 tools deferred to save context. Use tool_search to find them.]');
    m.setEffectiveWindow(6_000);
    expect(m.note()).toBe('[1 tool deferred to save context. Use tool_search to find them.]');
    m.setEffectiveWindow(7_000);
    expect(m.note()).toBe('');
  });

  it('a promotion lasts one turn', () => {
    const m = new DeferralManager({ tools: fixture(), counter: words, effectiveWindow: 4_000 });
    expect(m.promote(['mcp__a__two', 'Read', 'unknown', 'mcp__a__two'])).toEqual(['mcp__a__two']);
    expect(names(m.activeTools())).toEqual(['Read', 'skill_x', 'mcp__a__two', 'Bash', 'skill_y']);
    expect(m.promoted()).toEqual(['mcp__a__two']);
    // Still deferred: it leaves again next turn, and the note is unchanged.
    expect(m.isDeferred('mcp__a__two')).toBe(true);
    expect(m.note()).toBe('[3 tools deferred to save context. Use tool_search to find them.]');
    expect(m.report()).toMatchObject({ promoted: 1, promotedTokens: 100, tokensAfter: 400 });
    m.nextTurn();
    expect(m.promoted()).toEqual([]);
    expect(names(m.activeTools())).toEqual(['Read', 'skill_x', 'Bash', 'skill_y']);
    expect(m.report()).toMatchObject({ promoted: 0, promotedTokens: 0 });
  });

  it('a promotion is dropped when a recompute un-defers the tool, or the tool is removed', () => {
    const m = new DeferralManager({ tools: fixture(), counter: words, effectiveWindow: 4_000 });
    m.promote(['mcp__a__one', 'mcp__b__three']);
    m.removeTools(['mcp__b__three']); // 600 left, limit 400: 2 MCP deferred
    expect(m.promoted()).toEqual(['mcp__a__one']);
    m.setEffectiveWindow(10_000);
    expect(m.promoted()).toEqual([]);
    expect(m.deferredTools()).toEqual([]);
  });

  it('recomputes when an MCP server connects and disconnects', () => {
    const m = new DeferralManager({ tools: fixture(), counter: words, effectiveWindow: 10_000 }); // limit 1000, 700 used
    const rev = m.revision;
    m.addTools([
      tool('mcp__c__x', 'mcp', 150, 'c'),
      tool('mcp__c__y', 'mcp', 150, 'c'),
      tool('mcp__c__z', 'mcp', 150, 'c'),
    ]); // 1150
    expect(m.revision).toBeGreaterThan(rev);
    expect(names(m.deferredTools())).toEqual(['mcp__a__one', 'mcp__a__two']); // 1150 − 200 = 950
    expect(m.note()).toBe('[2 tools deferred to save context. Use tool_search to find them.]');
    expect(m.removeServer('c')).toBe(3);
    expect(m.deferredTools()).toEqual([]);
    expect(m.removeTools(['nope'])).toBe(0);
    expect(m.removeTools(['mcp__a__one', 'skill_x'])).toBe(2);
    expect(names(m.tools())).toEqual(['Read', 'mcp__a__two', 'Bash', 'mcp__b__three', 'skill_y']);
  });

  it('a re-added tool keeps its registration place; a removed then re-added one goes last', () => {
    const m = new DeferralManager({ tools: fixture(), counter: words, effectiveWindow: 6_000 });
    m.addTools([tool('mcp__a__one', 'mcp', 100, 'a')]);
    expect(names(m.deferredTools())).toEqual(['mcp__a__one']);
    m.removeTools(['mcp__a__one']);
    m.addTools([tool('mcp__a__one', 'mcp', 100, 'a')]);
    expect(names(m.tools()).at(-1)).toBe('mcp__a__one');
    expect(names(m.deferredTools())).toEqual(['mcp__a__two']);
  });

  it('reports tokens before and after, and counts per category', () => {
    const m = new DeferralManager({ tools: fixture(), counter: words, effectiveWindow: 3_000 });
    m.promote(['skill_x']);
    expect(m.report()).toEqual({
      threshold: 0.1,
      effectiveWindow: 3_000,
      limit: 300,
      tokensBefore: 700,
      tokensAfter: 300,
      savedTokens: 400,
      promotedTokens: 100,
      tools: 7,
      deferred: 4,
      promoted: 1,
      overLimit: false,
      byKind: {
        builtin: { tools: 2, deferred: 0, tokens: 200, deferredTokens: 0 },
        mcp: { tools: 3, deferred: 3, tokens: 300, deferredTokens: 300 },
        skill: { tools: 2, deferred: 1, tokens: 200, deferredTokens: 100 },
      },
    });
  });
});

// ---- tool_search over a realistic catalogue ----

const SERVERS: Record<string, { title: string; resources: string[]; common: Record<string, unknown> }> = {
  github: {
    title: 'GitHub',
    resources: ['issue', 'pull_request', 'branch', 'release'],
    common: { owner: { type: 'string' }, repo: { type: 'string' } },
  },
  gitlab: {
    title: 'GitLab',
    resources: ['issue', 'merge_request', 'pipeline', 'project'],
    common: { project_id: { type: 'integer' } },
  },
  jira: {
    title: 'Jira',
    resources: ['ticket', 'sprint', 'board', 'comment'],
    common: { project_key: { type: 'string' } },
  },
  slack: {
    title: 'Slack',
    resources: ['message', 'channel', 'reaction', 'reminder'],
    common: { workspace: { type: 'string' } },
  },
  linear: {
    title: 'Linear',
    resources: ['issue', 'project', 'cycle', 'team'],
    common: { team_id: { type: 'string' } },
  },
  notion: {
    title: 'Notion',
    resources: ['page', 'database', 'block', 'comment'],
    common: { workspace_id: { type: 'string' } },
  },
  postgres: {
    title: 'Postgres',
    resources: ['table', 'row', 'index', 'view'],
    common: { database: { type: 'string' } },
  },
  sentry: {
    title: 'Sentry',
    resources: ['event', 'alert', 'project', 'release'],
    common: { organization_slug: { type: 'string' } },
  },
  stripe: {
    title: 'Stripe',
    resources: ['customer', 'invoice', 'payment', 'refund'],
    common: { livemode: { type: 'boolean' } },
  },
  calendar: {
    title: 'Calendar',
    resources: ['event', 'calendar', 'attendee', 'booking'],
    common: { calendar_id: { type: 'string' } },
  },
};

function catalogue(): DeferrableTool[] {
  const out: DeferrableTool[] = [];
  for (const [server, { title, resources, common }] of Object.entries(SERVERS)) {
    for (const res of resources) {
      const words = res.replace(/_/g, ' ');
      const id = { [`${res}_id`]: { type: 'string' } };
      const actions: [string, string, Record<string, unknown>][] = [
        ['create', `Create a new ${words} in ${title}.`, { title: { type: 'string' }, body: { type: 'string' } }],
        ['get', `Fetch one ${words} from ${title} by its id.`, id],
        [
          'list',
          `List ${words}s in ${title}, optionally filtered.`,
          {
            filter: { type: 'object', properties: { status: { type: 'string' }, assignee: { type: 'string' } } },
            page: { type: 'integer' },
          },
        ],
        ['update', `Change fields of an existing ${words} in ${title}.`, { ...id, fields: { type: 'object' } }],
        ['delete', `Delete a ${words} from ${title}. Cannot be undone.`, id],
      ];
      for (const [verb, description, props] of actions) {
        const properties = {
          ...common,
          ...props,
          ...(server === 'jira' && res === 'comment' ? { ticket_key: { type: 'string' } } : {}),
        };
        out.push({
          name: `mcp__${server}__${verb}_${res}`,
          kind: 'mcp',
          server,
          description,
          inputSchema: { type: 'object', properties, required: Object.keys(properties).slice(0, 1) },
        });
      }
    }
  }
  return out;
}

/** A tool whose owner/repo parameters sit two levels down, and whose name and description say nothing of them. */
const TRIGGER_BUILD: DeferrableTool = {
  name: 'mcp__ci__trigger_build',
  kind: 'mcp',
  server: 'ci',
  description: 'Start a build pipeline run.',
  inputSchema: {
    type: 'object',
    properties: {
      target: {
        type: 'object',
        properties: {
          source: {
            anyOf: [
              { type: 'object', properties: { owner: { type: 'string' }, repo: { type: 'string' } } },
              { type: 'string' },
            ],
          },
        },
      },
      wait: { type: 'boolean' },
    },
  },
};

const BUILTINS: DeferrableTool[] = [
  {
    name: 'Read',
    kind: 'builtin',
    description: 'Read a file from disk.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } } },
  },
  {
    name: 'Bash',
    kind: 'builtin',
    description: 'Run a shell command.',
    inputSchema: { type: 'object', properties: { command: { type: 'string' } } },
  },
];
const SKILLS: DeferrableTool[] = [
  {
    name: 'skill__pdf_extract',
    kind: 'skill',
    description: 'Extract text and tables from PDF documents.',
    inputSchema: { type: 'object', properties: { file: { type: 'string' } } },
  },
];

function searchSetup() {
  const tools = [...BUILTINS, ...catalogue(), TRIGGER_BUILD, ...SKILLS];
  const manager = new DeferralManager({ tools, counter: new TokenCounter(), effectiveWindow: 100 }); // limit 10: every MCP and skill tool deferred
  return { manager, search: toolSearchTool(manager) };
}

/** The JSON array after the answer's first line. */
function results(answer: string): { name: string; description: string; input_schema: Record<string, unknown> }[] {
  const nl = answer.indexOf('\n');
  expect(nl).toBeGreaterThan(0);
  return JSON.parse(answer.slice(nl + 1)) as {
    name: string;
    description: string;
    input_schema: Record<string, unknown>;
  }[];
}

describe('tool_search', () => {
  it('the catalogue is 200 generated MCP tools, all deferred', () => {
    expect(catalogue()).toHaveLength(200);
    const { manager, search } = searchSetup();
    expect(search.name).toBe('tool_search');
    expect(manager.deferredTools()).toHaveLength(202);
    expect(names(manager.activeTools())).toEqual(['Read', 'Bash']);
    expect(manager.note()).toBe('[202 tools deferred to save context. Use tool_search to find them.]');
  });

  it('ranks mcp__github__create_issue first for "create github issue", and returns its full definition', async () => {
    const { manager, search } = searchSetup();
    const answer = await search.run({ query: 'create github issue' });
    expect(answer.split('\n')[0]).toBe(
      '5 tools match "create github issue", best first; they are available to call this turn:',
    );
    const found = results(answer);
    expect(found).toHaveLength(5);
    expect(found[0]!.name).toBe('mcp__github__create_issue');
    const def = manager.tool('mcp__github__create_issue')!;
    expect(found[0]).toEqual({
      name: def.name,
      description: 'Create a new issue in GitHub.',
      input_schema: def.inputSchema,
    });
    expect(found[0]!.input_schema).toEqual({
      type: 'object',
      properties: {
        owner: { type: 'string' },
        repo: { type: 'string' },
        title: { type: 'string' },
        body: { type: 'string' },
      },
      required: ['owner'],
    });
  });

  it('promotes what it found for this turn only', async () => {
    const { manager, search } = searchSetup();
    const found = results(await search.run({ query: 'create github issue', limit: 2 }));
    expect([...manager.promoted()].sort()).toEqual(found.map((f) => f.name).sort());
    expect(names(manager.activeTools())).toEqual(expect.arrayContaining(['Read', 'Bash', 'mcp__github__create_issue']));
    expect(manager.activeTools()).toHaveLength(4); // Read, Bash and the two found
    manager.nextTurn();
    expect(names(manager.activeTools())).toEqual(['Read', 'Bash']);
  });

  it('respects the limit (default 5, up to 20)', async () => {
    const { search } = searchSetup();
    expect(results(await search.run({ query: 'list' }))).toHaveLength(5);
    expect(results(await search.run({ query: 'list', limit: 1 }))).toHaveLength(1);
    expect(results(await search.run({ query: 'list', limit: 3 }))).toHaveLength(3);
    const twenty = results(await search.run({ query: 'list', limit: 20 }));
    expect(twenty).toHaveLength(20);
    expect(twenty.slice(0, 5).every((t) => /^mcp__\w+__list_/.test(t.name))).toBe(true);
    expect((await search.run({ query: 'list', limit: 1 })).split('\n')[0]).toBe(
      '1 tool matches "list", best first; it is available to call this turn:',
    );
  });

  it('matches parameter names, nested ones included: "repository owner" finds the owner/repo tools', async () => {
    const { search } = searchSetup();
    const found = results(await search.run({ query: 'repository owner', limit: 20 }));
    expect(found.length).toBe(20);
    for (const f of found) expect(parameterNames(f.input_schema)).toEqual(expect.arrayContaining(['owner', 'repo']));
    expect(found.map((f) => f.name)).toContain('mcp__ci__trigger_build');
    expect(found.filter((f) => f.name.startsWith('mcp__github__'))).toHaveLength(19);
  });

  it('is fuzzy: "jira tikcet" finds the Jira ticket tools first', async () => {
    const { search } = searchSetup();
    const found = results(await search.run({ query: 'jira tikcet' }));
    expect(found.map((f) => f.name)).toEqual(
      expect.arrayContaining([
        'mcp__jira__create_ticket',
        'mcp__jira__get_ticket',
        'mcp__jira__list_ticket',
        'mcp__jira__update_ticket',
        'mcp__jira__delete_ticket',
      ]),
    );
  });

  it('matches prefixes and camelCase / snake_case pieces', async () => {
    const { search } = searchSetup();
    expect(results(await search.run({ query: 'refu' }))[0]!.name).toMatch(/^mcp__stripe__\w+_refund$/);
    expect(
      results(await search.run({ query: 'mergeRequest', limit: 5 })).every((f) => f.name.endsWith('_merge_request')),
    ).toBe(true);
    expect(results(await search.run({ query: 'pdf' }))[0]!.name).toBe('skill__pdf_extract');
    expect(searchTerms('mcp__github__createIssue HTTPServer x2')).toEqual([
      'mcp',
      'github',
      'create',
      'Issue',
      'HTTP',
      'Server',
      'x2',
    ]);
  });

  it('an exact tool name comes first', async () => {
    const { manager } = searchSetup();
    expect(searchDeferredTools(manager, 'mcp__slack__delete_reaction', 3)[0]!.tool.name).toBe(
      'mcp__slack__delete_reaction',
    );
  });

  it('no match: a helpful line naming a few deferred tools across servers, nothing promoted', async () => {
    const { manager, search } = searchSetup();
    const answer = await search.run({ query: 'xylophone quokka' });
    expect(answer).toBe(
      'No deferred tool matches "xylophone quokka". Deferred tools include mcp__github__create_issue, mcp__gitlab__create_issue, mcp__jira__create_ticket, mcp__slack__create_message, mcp__linear__create_issue, mcp__notion__create_page, mcp__postgres__create_table, mcp__sentry__create_event and 194 more; try other keywords (an action, a service, a parameter name) or a tool\'s name.',
    );
    expect(manager.promoted()).toEqual([]);
  });

  it('with nothing deferred, says so', async () => {
    const manager = new DeferralManager({ tools: BUILTINS, counter: new TokenCounter(), effectiveWindow: 200_000 });
    expect(await toolSearchTool(manager).run({ query: 'anything' })).toBe(
      'No tools are deferred: all 2 tools are already available.',
    );
  });

  it('answers invalid input with "Error: …"', async () => {
    const { search } = searchSetup();
    for (const bad of [
      undefined,
      {},
      { query: '' },
      { query: '   ' },
      { query: 'x'.repeat(501) },
      { query: 42 },
      { query: 'issue', limit: 0 },
      { query: 'issue', limit: 21 },
      { query: 'issue', limit: 2.5 },
      { query: 'issue', limit: '3' },
    ]) {
      const answer = await search.run(bad);
      expect(answer).toMatch(/^Error: invalid input for tool_search: /);
    }
    expect(await search.run({ query: 'issue', limit: 0 })).toContain('limit');
    expect(await search.run({ query: 'x'.repeat(500) })).toMatch(/^No deferred tool matches/);
  });

  it('follows the deferred set: a connected server is searchable, a disconnected one is gone', async () => {
    const { manager, search } = searchSetup();
    manager.addTools([
      {
        name: 'mcp__figma__export_frame',
        kind: 'mcp',
        server: 'figma',
        description: 'Export a frame as PNG.',
        inputSchema: { type: 'object', properties: { frame_id: { type: 'string' } } },
      },
    ]);
    expect(results(await search.run({ query: 'figma frame' }))[0]!.name).toBe('mcp__figma__export_frame');
    manager.removeServer('figma');
    expect(await search.run({ query: 'figma' })).toMatch(/^No deferred tool matches "figma"/);
  });

  it('walks JSON Schema recursively for parameter names', () => {
    expect(
      parameterNames({
        type: 'object',
        properties: {
          a: { type: 'array', items: { type: 'object', properties: { b: { type: 'string' } } } },
          c: { oneOf: [{ type: 'object', properties: { d: {} } }, { $ref: '#/$defs/E' }] },
          f: { type: 'object', additionalProperties: { type: 'object', properties: { g: {} } } },
        },
        $defs: { E: { type: 'object', properties: { h: {}, a: {} } } },
      }),
    ).toEqual(['a', 'b', 'c', 'd', 'f', 'g', 'h']);
    const loop: Record<string, unknown> = { type: 'object', properties: {} };
    (loop.properties as Record<string, unknown>).self = loop;
    expect(parameterNames(loop)).toEqual(['self']);
  });
});

describe('tool_search: capped answers', () => {
  it('shows whole definitions, best first, while they fit, and says how many more matched; only those shown are promoted', async () => {
    const many = Array.from({ length: 20 }, (_, i) => ({
      name: `mcp__s__report_${i}`,
      kind: 'mcp' as const,
      server: 's',
      description: `report ${text(400, 'r')}`,
      inputSchema: EMPTY_SCHEMA,
    }));
    const m = new DeferralManager({ tools: many, counter: words, effectiveWindow: 100, threshold: 0.01 });
    const search = toolSearchTool(m, { limits: { maxBytes: 8192 } });
    const out = await search.run({ query: 'report', limit: 20 });
    expect(Buffer.byteLength(out)).toBeLessThanOrEqual(8192);
    const shown = Number(/^(\d+) tools? match/.exec(out)![1]);
    expect(shown).toBeGreaterThan(0);
    expect(shown).toBeLessThan(20);
    expect(out.split('\n').at(-1)).toBe(
      `[answer capped at 8,192 bytes / 8,000 tokens: ${20 - shown} more matching tools not shown; search again with narrower keywords or a tool's name]`,
    );
    expect(JSON.parse(out.slice(out.indexOf('\n') + 1, out.lastIndexOf('\n'))).length).toBe(shown);
    expect(m.promoted().length).toBe(shown);
  });
});
