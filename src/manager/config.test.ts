import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_BUDGET_SETTINGS, SEED_ALLOCATIONS } from '../budget/defaults.js';
import { AbridgeError } from '../errors.js';
import {
  ConfigFileSchema,
  DEFAULT_CONFIG,
  configJsonSchema,
  editDistance,
  mergeConfig,
  parseConfig,
  suggest,
  validateConfig,
  type AbridgeConfig,
} from './config.js';
import { findConfigFile, jsonErrorOffset, loadConfig, parseConfigText } from './config-file.js';

const SHARE = 'a share like "80%" or a number between 0 and 1';
const AMOUNT = 'a number of tokens (an integer ≥ 0) or a share of the window like "30%" (at most 100%)';
const ORDER = 'expected target < warn ≤ compact ≤ block';

/** The problems parseConfig reports for `value` read from `c.json`, one per line. */
function problems(value: unknown): string[] {
  try {
    parseConfig(value, 'c.json');
  } catch (err) {
    expect(err).toBeInstanceOf(AbridgeError);
    expect((err as AbridgeError).code).toBe('INVALID_CONFIG');
    return (err as AbridgeError).message.split('\n');
  }
  throw new Error('expected parseConfig to throw');
}

function mergeProblems(base: AbridgeConfig, overrides: Parameters<typeof mergeConfig>[1]): string[] {
  try {
    mergeConfig(base, overrides);
  } catch (err) {
    expect((err as AbridgeError).code).toBe('INVALID_CONFIG');
    return (err as AbridgeError).message.split('\n');
  }
  throw new Error('expected mergeConfig to throw');
}

const FULL_EXAMPLE = {
  $schema: './node_modules/abridge-context/schema/abridge.config.schema.json',
  model: 'claude-sonnet-4-5',
  contextWindow: 200000,
  reserveTokens: 32000,
  defaultContextWindow: 100000,
  defaultMaxOutputTokens: 16000,
  prefixTokens: 2500,
  models: {
    'qwen-local': {
      contextWindow: 32768,
      maxOutputTokens: 4096,
      family: 'other',
      aliases: ['qwen2.5-coder:32b'],
      thresholds: { compact: '85%' },
    },
  },
  thresholds: { warn: '75%', compact: 0.88, block: '97.5%', target: '50%' },
  allocations: {
    system: '5%',
    memory: 2000,
    skills: '3%',
    tools: '10%',
    knowledgeBase: '3%',
    crossIssue: '2%',
    summary: '10%',
    recent: '30%',
    prompt: '2%',
    response: '35%',
  },
};

describe('parseConfig: valid files', () => {
  it('applies the defaults to an empty file', () => {
    const config = parseConfig({}, 'c.json');
    expect(config).toEqual({ budget: DEFAULT_BUDGET_SETTINGS, source: 'c.json' });
    expect(Object.keys(config.budget).sort()).toEqual([
      'allocations',
      'defaultContextWindow',
      'defaultMaxOutputTokens',
      'models',
      'thresholds',
    ]);
    expect(DEFAULT_CONFIG).toEqual({ budget: DEFAULT_BUDGET_SETTINGS });
    expect(DEFAULT_CONFIG.source).toBeUndefined();
    expect(Object.isFrozen(DEFAULT_CONFIG.budget.thresholds)).toBe(true);
  });

  it('converts every key of a full file', () => {
    expect(parseConfig(FULL_EXAMPLE, 'c.json')).toEqual({
      source: 'c.json',
      budget: {
        model: 'claude-sonnet-4-5',
        contextWindow: 200000,
        reserveTokens: 32000,
        defaultContextWindow: 100000,
        defaultMaxOutputTokens: 16000,
        prefixTokens: 2500,
        models: {
          'qwen-local': {
            contextWindow: 32768,
            maxOutputTokens: 4096,
            family: 'other',
            aliases: ['qwen2.5-coder:32b'],
            thresholds: { compact: 0.85 },
          },
        },
        thresholds: { warn: 0.75, compact: 0.88, block: 0.975, target: 0.5 },
        allocations: {
          system: { share: 0.05 },
          memory: { tokens: 2000 },
          skills: { share: 0.03 },
          tools: { share: 0.1 },
          knowledgeBase: { share: 0.03 },
          crossIssue: { share: 0.02 },
          summary: { share: 0.1 },
          recent: { share: 0.3 },
          prompt: { share: 0.02 },
          response: { share: 0.35 },
        },
      },
    });
  });

  it('accepts a $schema key and ignores it', () => {
    expect(parseConfig({ $schema: 'https://example.com/abridge.config.schema.json' }, 'c.json').budget).toEqual(
      DEFAULT_BUDGET_SETTINGS,
    );
  });

  it('fills unset thresholds from the defaults', () => {
    expect(parseConfig({ thresholds: { warn: '12.5%', target: 0.1 } }, 'c.json').budget.thresholds).toEqual({
      warn: 0.125,
      compact: 0.9,
      block: 0.98,
      target: 0.1,
    });
    expect(
      parseConfig({ thresholds: { block: '100%', compact: 1, warn: '100.0%' } }, 'c.json').budget.thresholds,
    ).toEqual({ warn: 1, compact: 1, block: 1, target: 0.6 });
  });

  it('"seed" allocations are the seed plan', () => {
    expect(parseConfig({ allocations: 'seed' }, 'c.json').budget.allocations).toEqual(SEED_ALLOCATIONS);
  });

  it('allocations take 0% to 100% and any token count', () => {
    expect(
      parseConfig({ allocations: { system: '0%', recent: '100%', memory: 0, tools: 50_000 } }, 'c.json').budget
        .allocations,
    ).toEqual({
      system: { share: 0 },
      recent: { share: 1 },
      memory: { tokens: 0 },
      tools: { tokens: 50_000 },
    });
  });

  it('per-model thresholds are kept partial and checked merged with the top-level ones', () => {
    const config = parseConfig(
      { thresholds: { warn: '70%' }, models: { 'qwen-local': { thresholds: { compact: '75%' } } } },
      'c.json',
    );
    expect(config.budget.models['qwen-local']).toEqual({ thresholds: { compact: 0.75 } });
    // compact 80% for one model is fine with the default warn (80%) …
    expect(() => parseConfig({ models: { a: { thresholds: { compact: '80%' } } } }, 'c.json')).not.toThrow();
    // … and not with a top-level warn of 85%, nor with a model target above the default warn.
    expect(
      problems({
        thresholds: { warn: '85%' },
        models: { a: { thresholds: { compact: '80%' } }, b: { thresholds: { target: 0.85 } } },
      }),
    ).toEqual([
      `c.json: models["a"].thresholds.compact: "80%" is below thresholds.warn ("85%"); ${ORDER}`,
      `c.json: models["b"].thresholds.target: 0.85 is not below thresholds.warn ("85%"); ${ORDER}`,
    ]);
    // A model's own warn may rise above the top-level compact if its compact rises too.
    expect(() =>
      parseConfig({ models: { a: { thresholds: { warn: '93%', compact: '95%' } } } }, 'c.json'),
    ).not.toThrow();
  });

  it('keeps model ids that look like object internals as plain keys', () => {
    const config = parseConfig(
      JSON.parse('{"models": {"__proto__": {"contextWindow": 1000}, "constructor": {"family": "gpt"}}}'),
      'c.json',
    );
    expect(Object.keys(config.budget.models)).toEqual(['__proto__', 'constructor']);
    expect(Object.getPrototypeOf(config.budget.models)).toBe(Object.prototype);
    // biome-ignore lint/suspicious/noProto: the test checks that a model named __proto__ is kept as a plain key
    expect(config.budget.models['__proto__']).toEqual({ contextWindow: 1000 });
  });
});

describe('parseConfig: bad values', () => {
  it('rejects a file that is not an object', () => {
    expect(problems([1, 2])).toEqual(['c.json: expected a JSON object at top level, got [1,2]']);
    expect(problems(null)).toEqual(['c.json: expected a JSON object at top level, got null']);
    expect(problems('x')).toEqual(['c.json: expected a JSON object at top level, got "x"']);
  });

  it('wrong types', () => {
    expect(
      problems({ model: 5, contextWindow: '200000', thresholds: null, models: [], allocations: 3, $schema: false }),
    ).toEqual([
      'c.json: $schema: expected a string (the JSON Schema of this file), got false',
      'c.json: model: expected a non-empty model id, got 5',
      'c.json: contextWindow: expected a positive integer (tokens), got "200000"',
      'c.json: models: expected an object mapping non-empty model ids to their settings, got []',
      'c.json: thresholds: expected an object with any of warn, compact, block, target, got null',
      'c.json: allocations: expected "seed" or an object of budgets per component (a number of tokens or a share like "10%"), got 3',
    ]);
    expect(problems({ models: { 'qwen-local': 32768 } })).toEqual([
      'c.json: models["qwen-local"]: expected an object with any of contextWindow, maxOutputTokens, family, aliases, thresholds, got 32768',
    ]);
    expect(problems({ models: { m: { family: 'llama', aliases: 'm2' } } })).toEqual([
      'c.json: models["m"].family: expected one of "claude", "gpt", "gemini", "other", got "llama"',
      'c.json: models["m"].aliases: expected an array of model ids, got "m2"',
    ]);
    expect(problems({ allocations: 'default' })).toEqual([
      'c.json: allocations: expected "seed" or an object of budgets per component (a number of tokens or a share like "10%"), got "default"',
    ]);
  });

  it('empty strings where an id is expected', () => {
    expect(problems({ model: '', models: { '': { contextWindow: 1000 }, m: { aliases: ['m-2', ''] } } })).toEqual([
      'c.json: model: expected a non-empty model id, got ""',
      'c.json: models: expected an object mapping non-empty model ids to their settings, got the key ""',
      'c.json: models["m"].aliases[1]: expected a non-empty model id, got ""',
    ]);
  });

  it('bad percent strings and out-of-range thresholds', () => {
    expect(problems({ thresholds: { warn: '80', compact: 'abc%', block: '-5%', target: '150%' } })).toEqual([
      `c.json: thresholds.warn: expected ${SHARE}, got "80"`,
      `c.json: thresholds.compact: expected ${SHARE}, got "abc%"`,
      `c.json: thresholds.block: expected ${SHARE}, got "-5%"`,
      `c.json: thresholds.target: expected ${SHARE}, got "150%"`,
    ]);
    expect(problems({ thresholds: { warn: 1.5, compact: 0, block: -0.1, target: '0%' } })).toEqual([
      `c.json: thresholds.warn: expected ${SHARE}, got 1.5`,
      `c.json: thresholds.compact: expected ${SHARE}, got 0`,
      `c.json: thresholds.block: expected ${SHARE}, got -0.1`,
      `c.json: thresholds.target: expected ${SHARE}, got "0%"`,
    ]);
    expect(problems({ thresholds: { warn: '80 %', compact: '.9%', block: '098%' } })).toEqual([
      `c.json: thresholds.warn: expected ${SHARE}, got "80 %"`,
      `c.json: thresholds.compact: expected ${SHARE}, got ".9%"`,
      `c.json: thresholds.block: expected ${SHARE}, got "098%"`,
    ]);
    expect(problems({ models: { 'qwen-local': { thresholds: { compact: '101%' } } } })).toEqual([
      `c.json: models["qwen-local"].thresholds.compact: expected ${SHARE}, got "101%"`,
    ]);
  });

  it('bad allocations: percent strings, negative and fractional tokens', () => {
    expect(
      problems({ allocations: { system: '100.5%', memory: -2000, skills: 1.5, tools: '10', recent: 0.3 } }),
    ).toEqual([
      `c.json: allocations.system: expected ${AMOUNT}, got "100.5%"`,
      `c.json: allocations.memory: expected ${AMOUNT}, got -2000`,
      `c.json: allocations.skills: expected ${AMOUNT}, got 1.5`,
      `c.json: allocations.tools: expected ${AMOUNT}, got "10"`,
      `c.json: allocations.recent: expected ${AMOUNT}, got 0.3`,
    ]);
  });

  it('negative token counts', () => {
    expect(problems({ reserveTokens: -1, prefixTokens: -2500, defaultMaxOutputTokens: 0 })).toEqual([
      'c.json: reserveTokens: expected an integer ≥ 0 (tokens), got -1',
      'c.json: defaultMaxOutputTokens: expected a positive integer (tokens), got 0',
      'c.json: prefixTokens: expected an integer ≥ 0 (tokens), got -2500',
    ]);
  });

  it('non-integer and non-positive windows', () => {
    expect(
      problems({
        contextWindow: 1.5,
        defaultContextWindow: 0,
        models: { 'qwen-local': { contextWindow: 32768.5, maxOutputTokens: -1 } },
      }),
    ).toEqual([
      'c.json: contextWindow: expected a positive integer (tokens), got 1.5',
      'c.json: defaultContextWindow: expected a positive integer (tokens), got 0',
      'c.json: models["qwen-local"].contextWindow: expected a positive integer (tokens), got 32768.5',
      'c.json: models["qwen-local"].maxOutputTokens: expected a positive integer (tokens), got -1',
    ]);
  });

  it('disordered thresholds, blaming the value that was set', () => {
    expect(problems({ thresholds: { warn: '95%' } })).toEqual([
      `c.json: thresholds.warn: "95%" is above thresholds.compact (0.9, the default); ${ORDER}`,
    ]);
    expect(problems({ thresholds: { compact: 0.7 } })).toEqual([
      `c.json: thresholds.compact: 0.7 is below thresholds.warn (0.8, the default); ${ORDER}`,
    ]);
    expect(problems({ thresholds: { warn: '30%' } })).toEqual([
      `c.json: thresholds.warn: "30%" is not above thresholds.target (0.6, the default); ${ORDER}`,
    ]);
    expect(problems({ thresholds: { target: '80%', warn: '80%' } })).toEqual([
      `c.json: thresholds.target: "80%" is not below thresholds.warn ("80%"); ${ORDER}`,
    ]);
    expect(problems({ thresholds: { target: 0.5, warn: 0.95, compact: 0.9, block: 0.85 } })).toEqual([
      `c.json: thresholds.warn: 0.95 is above thresholds.compact (0.9); ${ORDER}`,
      `c.json: thresholds.compact: 0.9 is above thresholds.block (0.85); ${ORDER}`,
    ]);
  });

  it('allocation shares over 100%', () => {
    expect(problems({ allocations: { system: '50%', memory: 100_000, recent: '60%', response: '0.5%' } })).toEqual([
      'c.json: allocations: expected shares adding up to at most 100% of the window, got 110.5% (system "50%", recent "60%", response "0.5%")',
    ]);
    expect(() =>
      parseConfig({ allocations: { system: '33.3%', recent: '33.3%', response: '33.4%' } }, 'c.json'),
    ).not.toThrow();
  });

  it('unknown keys at every level, with the nearest valid key', () => {
    expect(problems({ treshold: { warn: '80%' } })).toEqual([
      'c.json: unknown key "treshold" at top level; did you mean "thresholds"?',
    ]);
    expect(problems({ contextwindow: 1, context_window: 1, reserve: 1, modle: 'x' })).toEqual([
      'c.json: unknown key "contextwindow" at top level; did you mean "contextWindow"?',
      'c.json: unknown key "context_window" at top level; did you mean "contextWindow"?',
      'c.json: unknown key "reserve" at top level; did you mean "reserveTokens"?',
      'c.json: unknown key "modle" at top level; did you mean "model"?',
    ]);
    expect(problems({ thresholds: { wran: 0.5 } })).toEqual([
      'c.json: unknown key "wran" in thresholds; did you mean "warn"?',
    ]);
    expect(problems({ allocations: { sytem: '5%', knowledgebase: 100 } })).toEqual([
      'c.json: unknown key "sytem" in allocations; did you mean "system"?',
      'c.json: unknown key "knowledgebase" in allocations; did you mean "knowledgeBase"?',
    ]);
    expect(problems({ models: { 'qwen-local': { contextWindw: 32768, maxOutput: 4096 } } })).toEqual([
      'c.json: unknown key "contextWindw" in models["qwen-local"]; did you mean "contextWindow"?',
      'c.json: unknown key "maxOutput" in models["qwen-local"]; did you mean "maxOutputTokens"?',
    ]);
    expect(problems({ models: { m: { thresholds: { compcat: 0.9 } } } })).toEqual([
      'c.json: unknown key "compcat" in models["m"].thresholds; did you mean "compact"?',
    ]);
    expect(problems({ colour: 'red' })).toEqual([
      'c.json: unknown key "colour" at top level; expected one of $schema, model, contextWindow, reserveTokens, defaultContextWindow, defaultMaxOutputTokens, prefixTokens, catalog, models, thresholds, redaction, allocations',
    ]);
  });

  it('reports every problem at once, one per line', () => {
    expect(
      problems({
        treshold: {},
        contextWindow: -5,
        thresholds: { warn: '150%' },
        models: { 'qwen-local': { contextWindow: '32k' } },
        allocations: { system: '80%', recent: '30%' },
      }),
    ).toEqual([
      'c.json: contextWindow: expected a positive integer (tokens), got -5',
      'c.json: models["qwen-local"].contextWindow: expected a positive integer (tokens), got "32k"',
      `c.json: thresholds.warn: expected ${SHARE}, got "150%"`,
      'c.json: unknown key "treshold" at top level; did you mean "thresholds"?',
      'c.json: allocations: expected shares adding up to at most 100% of the window, got 110% (system "80%", recent "30%")',
    ]);
  });

  it('truncates long values to about 60 characters', () => {
    const [line] = problems({ model: ['x'.repeat(100)] });
    expect(line).toBe(`c.json: model: expected a non-empty model id, got ["${'x'.repeat(57)}…`);
  });

  it('validateConfig returns the problems instead of throwing', () => {
    expect(validateConfig({ thresholds: { warn: 2 } }, 'c.json')).toEqual({
      problems: [`c.json: thresholds.warn: expected ${SHARE}, got 2`],
    });
    expect(validateConfig({}, 'c.json').config?.source).toBe('c.json');
  });
});

describe('suggestions', () => {
  it('Damerau-Levenshtein distance (adjacent transpositions count once)', () => {
    expect(editDistance('warn', 'warn')).toBe(0);
    expect(editDistance('wran', 'warn')).toBe(1);
    expect(editDistance('treshold', 'thresholds')).toBe(2);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('kitten', 'sitting')).toBe(3);
  });

  it('suggests only a likely typo', () => {
    expect(suggest('blokc', ['warn', 'compact', 'block', 'target'])).toBe('block');
    expect(suggest('colour', ['warn', 'compact', 'block', 'target'])).toBeUndefined();
  });
});

describe('mergeConfig: flags over the file', () => {
  const file = parseConfig(
    {
      model: 'claude-sonnet-4-5',
      contextWindow: 200000,
      reserveTokens: 32000,
      prefixTokens: 2500,
      thresholds: { warn: '75%' },
      models: { small: { contextWindow: 32768, thresholds: { warn: '65%', compact: '70%' } } },
    },
    'abridge.config.json',
  );

  it('flags win over file values; unset flags leave them', () => {
    const merged = mergeConfig(file, {
      model: 'gpt-5',
      contextWindow: 400000,
      reserveTokens: undefined,
      thresholds: { compact: 0.85 },
      prefixTokens: 0,
    });
    expect(merged.source).toBe('abridge.config.json');
    expect(merged.budget).toEqual({
      ...file.budget,
      model: 'gpt-5',
      contextWindow: 400000,
      prefixTokens: 0,
      thresholds: { warn: 0.75, compact: 0.85, block: 0.98, target: 0.6 },
      // a threshold flag applies to every model: the per-model compact gives way, its warn stays
      models: { small: { contextWindow: 32768, thresholds: { warn: 0.65 } } },
    });
    expect(file.budget.thresholds.compact).toBe(0.9); // the base is not changed
    expect(file.budget.models['small']?.thresholds).toEqual({ warn: 0.65, compact: 0.7 });
  });

  it('takes the flags as text', () => {
    const merged = mergeConfig(DEFAULT_CONFIG, {
      contextWindow: '200000',
      reserveTokens: ' 16000 ',
      thresholds: { warn: '70%', target: '0.5' },
    });
    expect(merged.budget.contextWindow).toBe(200000);
    expect(merged.budget.reserveTokens).toBe(16000);
    expect(merged.budget.thresholds).toEqual({ warn: 0.7, compact: 0.9, block: 0.98, target: 0.5 });
    expect(merged.source).toBeUndefined();
    expect(mergeConfig(file, {})).toEqual(file);
    const copy = mergeConfig(DEFAULT_CONFIG, {});
    copy.budget.allocations.system = { share: 0.1 }; // a copy, not the frozen defaults
    expect(DEFAULT_CONFIG.budget.allocations).toEqual({});
  });

  it('a flag that empties a per-model override removes it', () => {
    const merged = mergeConfig(file, { thresholds: { warn: '65%', compact: '71%' } });
    expect(merged.budget.models).toEqual({ small: { contextWindow: 32768 } });
  });

  it('errors name the flag', () => {
    expect(
      mergeProblems(file, {
        model: '',
        contextWindow: 'abc',
        reserveTokens: -1,
        prefixTokens: '2.5k',
        thresholds: { warn: '150%', block: 0 },
      }),
    ).toEqual([
      '--model: expected a non-empty model id, got ""',
      '--context-window: expected a positive integer (tokens), got "abc"',
      '--reserve-tokens: expected an integer ≥ 0 (tokens), got -1',
      `--warn: expected ${SHARE}, got "150%"`,
      `--block: expected ${SHARE}, got 0`,
      '--prefix-tokens: expected an integer ≥ 0 (tokens), got "2.5k"',
    ]);
    expect(mergeProblems(file, { contextWindow: '1.5' })).toEqual([
      '--context-window: expected a positive integer (tokens), got 1.5',
    ]);
  });

  it('checks the order of flags against the file, per model too', () => {
    expect(mergeProblems(file, { thresholds: { warn: 0.95 } })).toEqual([
      `--warn: 0.95 is above thresholds.compact (0.9); ${ORDER}`,
      `--warn: 0.95 is above models["small"].thresholds.compact (0.7); ${ORDER}`,
    ]);
    expect(mergeProblems(file, { thresholds: { warn: '99%', compact: '95%' } })).toEqual([
      `--warn: "99%" is above --compact ("95%"); ${ORDER}`,
    ]);
    expect(mergeProblems(file, { thresholds: { target: '65%' } })).toEqual([
      `--target: "65%" is not below models["small"].thresholds.warn (0.65); ${ORDER}`,
    ]);
    expect(mergeProblems(file, { thresholds: { block: '69%', compact: '68%' } })).toEqual([
      `--compact: "68%" is below thresholds.warn (0.75); ${ORDER}`,
    ]);
  });

  it('rejects unknown override keys', () => {
    expect(mergeProblems(file, { thresholds: { wran: 0.5 } as never })).toEqual([
      'overrides: unknown key "wran" in thresholds; did you mean "warn"?',
    ]);
  });
});

describe('configuration files', () => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'abridge-config-')));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const write = (path: string, text: string) => {
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, text);
    return path;
  };

  it('finds the nearest file upward; the .abridge/ form too', () => {
    const top = write(join(root, 'up', 'abridge.config.json'), '{"model": "top"}');
    const nested = join(root, 'up', 'a', 'b', 'c');
    mkdirSync(nested, { recursive: true });
    expect(findConfigFile(nested)).toBe(top);
    const dotted = write(join(root, 'up', 'a', '.abridge', 'abridge.config.json'), '{"model": "dotted"}');
    expect(findConfigFile(nested)).toBe(dotted);
    const nearest = write(join(root, 'up', 'a', 'b', 'abridge.config.json'), '{"model": "nearest"}');
    expect(findConfigFile(nested)).toBe(nearest);
    expect(findConfigFile(join(root, 'up', 'a', 'b'))).toBe(nearest);
    // both in one directory: the plain file wins
    const plain = write(join(root, 'up', 'a', 'abridge.config.json'), '{}');
    expect(findConfigFile(join(root, 'up', 'a'))).toBe(plain);
  });

  it('ignores directories named like the file and a .abridge that is a file', () => {
    mkdirSync(join(root, 'odd', 'abridge.config.json'), { recursive: true });
    writeFileSync(join(root, 'odd', '.abridge'), 'not a directory');
    const above = findConfigFile(root);
    expect(findConfigFile(join(root, 'odd'))).toBe(above);
  });

  it('loadConfig reads the nearest file from cwd', async () => {
    const config = await loadConfig({ cwd: join(root, 'up', 'a', 'b', 'c') });
    expect(config.source).toBe(join(root, 'up', 'a', 'b', 'abridge.config.json'));
    expect(config.budget.model).toBe('nearest');
  });

  it('loadConfig without a file gives the defaults, unfrozen', async () => {
    const empty = join(root, 'empty');
    mkdirSync(empty);
    if (findConfigFile(empty) !== undefined) return; // a configuration file above the temp directory: nothing to show
    const config = await loadConfig({ cwd: empty });
    expect(config).toEqual(DEFAULT_CONFIG);
    expect(config.source).toBeUndefined();
    config.budget.thresholds.warn = 0.5;
    expect(DEFAULT_CONFIG.budget.thresholds.warn).toBe(0.8);
  });

  it('an explicit path wins over searching and is read relative to cwd', async () => {
    write(join(root, 'explicit', 'custom.json'), '{"model": "explicit", "thresholds": {"warn": "70%"}}');
    const config = await loadConfig({ path: 'custom.json', cwd: join(root, 'explicit') });
    expect(config).toEqual({
      source: 'custom.json',
      budget: {
        ...DEFAULT_BUDGET_SETTINGS,
        model: 'explicit',
        thresholds: { warn: 0.7, compact: 0.9, block: 0.98, target: 0.6 },
      },
    });
    const found = await loadConfig({ path: join(root, 'explicit', 'custom.json'), cwd: join(root, 'up', 'a', 'b') });
    expect(found.budget.model).toBe('explicit');
  });

  it('catalog: a relative path is resolved beside the configuration file, an absolute one kept; bad values are named', async () => {
    write(join(root, 'cat', 'sub', 'abridge.config.json'), '{"catalog": "../models/api.json"}');
    const config = await loadConfig({ cwd: join(root, 'cat', 'sub') });
    expect(config.budget.catalog).toBe(join(root, 'cat', 'models', 'api.json'));
    expect(parseConfig({ catalog: '/abs/api.json' }, 'c.json').budget.catalog).toBe('/abs/api.json');
    expect(() => parseConfig({ catalog: '' }, 'c.json')).toThrow(
      'c.json: catalog: expected a non-empty path to a JSON file, got ""',
    );
    expect(() => parseConfig({ catalog: 3 }, 'c.json')).toThrow(
      'c.json: catalog: expected a non-empty path to a JSON file, got 3',
    );
    expect(mergeConfig(config, { catalog: '/other/api.json' }).budget.catalog).toBe('/other/api.json');
    expect(() => mergeConfig(config, { catalog: '' })).toThrow(
      '--catalog: expected a non-empty path to a JSON file, got ""',
    );
  });

  it('a missing explicit file is an error naming it', async () => {
    await expect(loadConfig({ path: 'nope.json', cwd: root })).rejects.toMatchObject({
      code: 'FILE_NOT_FOUND',
      message: 'nope.json: no such configuration file',
    });
    await expect(loadConfig({ path: 'up', cwd: root })).rejects.toMatchObject({
      code: 'FILE_UNREADABLE',
      message: 'up: is a directory, expected a configuration file',
    });
  });

  it('validation errors name the file', async () => {
    write(join(root, 'bad', 'abridge.config.json'), '{"thresholds": {"warn": "80"}}');
    const path = join(root, 'bad', 'abridge.config.json');
    await expect(loadConfig({ cwd: join(root, 'bad') })).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: `${path}: thresholds.warn: expected ${SHARE}, got "80"`,
    });
  });

  it('invalid JSON names the file, line and column', async () => {
    // V8 gives a position for this one ("Expected double-quoted property name in JSON at position 32")
    const trailingComma = '{\n  "model": "claude-sonnet-4-5",\n}\n';
    expect(() => parseConfigText(trailingComma, 'abridge.config.json')).toThrow(
      expect.objectContaining({
        code: 'INVALID_CONFIG',
        message: expect.stringMatching(
          /^abridge\.config\.json:3:1: invalid JSON: Expected double-quoted property name$/,
        ),
      }),
    );
    // … and none for this one ("Unexpected token 'o', …"): the position is found by scanning
    const bareWord = '{\n  "contextWindow": 200000,\n  "model": nope\n}\n';
    expect(() => parseConfigText(bareWord, 'abridge.config.json')).toThrow(
      expect.objectContaining({
        message: expect.stringMatching(/^abridge\.config\.json:3:13: invalid JSON: Unexpected token\b/),
      }),
    );
    expect(() => parseConfigText('', 'e.json')).toThrow(
      expect.objectContaining({
        message: expect.stringMatching(/^e\.json:1:1: invalid JSON: Unexpected end of JSON input$/),
      }),
    );
    write(join(root, 'broken', 'abridge.config.json'), '{"model": "x"}}');
    await expect(loadConfig({ path: 'broken/abridge.config.json', cwd: root })).rejects.toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringMatching(
        /^broken\/abridge\.config\.json:1:15: invalid JSON: Unexpected non-whitespace character after JSON$/,
      ),
    });
  });

  it('reads a file with a byte-order mark', () => {
    expect(parseConfigText('\ufeff{"model": "m"}', 'bom.json').budget.model).toBe('m');
  });

  it('jsonErrorOffset finds where JSON goes wrong', () => {
    const cases: [string, number][] = [
      ['{"a": 1}', -1],
      ['[1, 2, {"b": [true, false, null, -1.5e3, "x\\u00e9\\n"]}]', -1],
      ['{"a":}', 5],
      ['{"a": tru}', 9],
      ['[1,]', 3],
      ['{"a" 1}', 5],
      ['"\\q"', 2],
      ['{"a": 1}}', 8],
      ['{"a": "open', 11],
      ['-', 0],
    ];
    for (const [text, at] of cases) expect([text, jsonErrorOffset(text)]).toEqual([text, at]);
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// The published JSON Schema

type JsonSchema = Record<string, unknown> & {
  properties?: Record<string, JsonSchema>;
  additionalProperties?: boolean | JsonSchema;
  anyOf?: JsonSchema[];
  items?: JsonSchema;
  propertyNames?: JsonSchema;
};

/** A JSON Schema subset check (what configJsonSchema() uses): the paths where `value` fails. */
function schemaErrors(schema: JsonSchema, value: unknown, path = '$'): string[] {
  if (schema.anyOf)
    return schema.anyOf.some((s) => schemaErrors(s, value, path).length === 0)
      ? []
      : [`${path}: no anyOf branch matches`];
  const errors: string[] = [];
  const type = schema.type as string | undefined;
  const isObject = typeof value === 'object' && value !== null && !Array.isArray(value);
  const typeOk =
    type === undefined ||
    (type === 'object' && isObject) ||
    (type === 'array' && Array.isArray(value)) ||
    (type === 'string' && typeof value === 'string') ||
    (type === 'number' && typeof value === 'number') ||
    (type === 'integer' && Number.isInteger(value));
  if (!typeOk) return [`${path}: not ${type}`];
  if ('const' in schema && value !== schema.const) errors.push(`${path}: not ${String(schema.const)}`);
  if (Array.isArray(schema.enum) && !schema.enum.includes(value)) errors.push(`${path}: not in enum`);
  if (typeof value === 'string') {
    if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern, 'u').test(value))
      errors.push(`${path}: pattern`);
    if (typeof schema.minLength === 'number' && value.length < schema.minLength) errors.push(`${path}: minLength`);
  }
  if (typeof value === 'number') {
    if (typeof schema.minimum === 'number' && value < schema.minimum) errors.push(`${path}: minimum`);
    if (typeof schema.maximum === 'number' && value > schema.maximum) errors.push(`${path}: maximum`);
    if (typeof schema.exclusiveMinimum === 'number' && value <= schema.exclusiveMinimum)
      errors.push(`${path}: exclusiveMinimum`);
  }
  if (Array.isArray(value) && schema.items)
    value.forEach((v, i) => errors.push(...schemaErrors(schema.items!, v, `${path}[${i}]`)));
  if (isObject) {
    for (const [k, v] of Object.entries(value)) {
      if (schema.propertyNames)
        errors.push(...schemaErrors(schema.propertyNames, k, `${path} key ${JSON.stringify(k)}`));
      const sub = schema.properties?.[k] ?? schema.additionalProperties;
      if (sub === false) errors.push(`${path}.${k}: additional property`);
      else if (sub && sub !== true) errors.push(...schemaErrors(sub, v, `${path}.${k}`));
    }
  }
  return errors;
}

describe('the JSON Schema', () => {
  const schema = configJsonSchema() as JsonSchema;

  it('is committed up to date in schema/abridge.config.schema.json (regenerate: node scripts/config-schema.js)', () => {
    const committed = readFileSync(new URL('../../schema/abridge.config.schema.json', import.meta.url), 'utf8');
    expect(committed).toBe(`${JSON.stringify(schema, null, 2)}\n`);
  });

  it('is draft 2020-12 with a title', () => {
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(schema.title).toBe('abridge configuration');
  });

  it('has the zod object keys and additionalProperties: false at every level', () => {
    const model = schema.properties!.models!.additionalProperties as JsonSchema;
    const allocationObject = schema.properties!.allocations!.anyOf!.find((s) => s.type === 'object')!;
    const zodModel = ConfigFileSchema.shape.models.unwrap().valueType;
    const zodAllocations = ConfigFileSchema.shape.allocations.unwrap().options[1];
    const levels: [JsonSchema, string[]][] = [
      [schema, Object.keys(ConfigFileSchema.shape)],
      [schema.properties!.thresholds!, Object.keys(ConfigFileSchema.shape.thresholds.unwrap().shape)],
      [model, Object.keys(zodModel.shape)],
      [model.properties!.thresholds!, Object.keys(zodModel.shape.thresholds.unwrap().shape)],
      [allocationObject, Object.keys(zodAllocations.shape)],
    ];
    for (const [level, keys] of levels) {
      expect(Object.keys(level.properties!)).toEqual(keys);
      expect(level.additionalProperties).toBe(false);
    }
    expect(Object.keys(schema.properties!)).toEqual([
      '$schema',
      'model',
      'contextWindow',
      'reserveTokens',
      'defaultContextWindow',
      'defaultMaxOutputTokens',
      'prefixTokens',
      'catalog',
      'models',
      'thresholds',
      'redaction',
      'allocations',
    ]);
    expect(Object.keys(allocationObject.properties!)).toEqual([
      'system',
      'memory',
      'skills',
      'tools',
      'knowledgeBase',
      'crossIssue',
      'summary',
      'recent',
      'prompt',
      'response',
    ]);
  });

  it('describes every field', () => {
    const undescribed: string[] = [];
    const walk = (s: JsonSchema, path: string) => {
      for (const [k, sub] of Object.entries(s.properties ?? {})) {
        if (typeof sub.description !== 'string' || sub.description.length < 10) undescribed.push(`${path}.${k}`);
        walk(sub, `${path}.${k}`);
      }
      if (typeof s.additionalProperties === 'object') walk(s.additionalProperties, `${path}.*`);
      for (const branch of s.anyOf ?? []) walk(branch, path);
    };
    walk(schema, '$');
    expect(undescribed).toEqual([]);
  });

  it('accepts a full valid example and rejects what validation rejects structurally', () => {
    expect(schemaErrors(schema, FULL_EXAMPLE)).toEqual([]);
    expect(schemaErrors(schema, { allocations: 'seed' })).toEqual([]);
    expect(schemaErrors(schema, { treshold: {} })).toEqual(['$.treshold: additional property']);
    expect(schemaErrors(schema, { thresholds: { wrn: 0.8 } })).toEqual(['$.thresholds.wrn: additional property']);
    expect(schemaErrors(schema, { models: { m: { window: 1 } } })).toEqual(['$.models.m.window: additional property']);
    expect(schemaErrors(schema, { models: { m: { thresholds: { block: 1, x: 1 } } } })).toEqual([
      '$.models.m.thresholds.x: additional property',
    ]);
    expect(schemaErrors(schema, { models: { '': {} } })).toEqual(['$.models key "": minLength']);
    expect(schemaErrors(schema, { allocations: { sytem: '5%' } })).toEqual(['$.allocations: no anyOf branch matches']);
    for (const bad of ['80', 'abc%', '-5%', '150%', '0%', 1.5, 0])
      expect(schemaErrors(schema, { thresholds: { warn: bad } })).toEqual([
        '$.thresholds.warn: no anyOf branch matches',
      ]);
    for (const good of ['80%', '12.5%', '100%', '0.5%', 0.8, 1])
      expect(schemaErrors(schema, { thresholds: { warn: good } })).toEqual([]);
    for (const bad of ['100.5%', -1, 1.5])
      expect(schemaErrors(schema, { allocations: { system: bad } })).toEqual([
        '$.allocations: no anyOf branch matches',
      ]);
    expect(schemaErrors(schema, { contextWindow: 1.5 })).toEqual(['$.contextWindow: not integer']);
    expect(schemaErrors(schema, { reserveTokens: -1 })).toEqual(['$.reserveTokens: minimum']);
  });

  it('agrees with parseConfig on the example', () => {
    expect(() => parseConfig(FULL_EXAMPLE, 'c.json')).not.toThrow();
  });
});

describe('parseConfig: redaction', () => {
  it('reads enabled, disable and patterns; absent means the defaults (on)', () => {
    expect(parseConfig({}, 'c.json').redaction).toBeUndefined();
    expect(parseConfig({ redaction: { enabled: false } }, 'c.json').redaction).toEqual({
      enabled: false,
      disable: [],
      patterns: [],
    });
    expect(
      parseConfig(
        { redaction: { disable: ['jwt'], patterns: [{ id: 'acme-key', pattern: 'ACME-[0-9]{8}', flags: 'i' }] } },
        'c.json',
      ).redaction,
    ).toEqual({
      enabled: true,
      disable: ['jwt'],
      patterns: [{ id: 'acme-key', pattern: 'ACME-[0-9]{8}', flags: 'i' }],
    });
  });

  it('names bad kinds, ids and patterns', () => {
    const problems = (v: unknown) => {
      try {
        parseConfig(v, 'c.json');
        return '';
      } catch (err) {
        return (err as Error).message;
      }
    };
    expect(problems({ redaction: { disable: ['jwts'] } })).toMatch(
      /^c\.json: redaction\.disable\[0\]: expected one of private-key, .*jwt.*, got "jwts"$/,
    );
    expect(problems({ redaction: { patterns: [{ id: 'x', pattern: '(' }] } })).toBe(
      'c.json: redaction.patterns[0].pattern: expected a valid JavaScript regular expression, got "("',
    );
    expect(problems({ redaction: { enabled: 'yes' } })).toBe(
      'c.json: redaction.enabled: expected true or false, got "yes"',
    );
  });
});
