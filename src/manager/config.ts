/**
 * The configuration file (`abridge.config.json`): its schema (zod, also published as a JSON Schema), validation with
 * messages meant for a person (file, key path, bad value, what is allowed; every problem at once, one per line),
 * defaults, and command-line flags merged over the file. Finding and reading the file: ./config-file.ts.
 */
import { z } from 'zod';
import { DEFAULT_BUDGET_SETTINGS, DEFAULT_THRESHOLDS, SEED_ALLOCATIONS } from '../budget/defaults.js';
import {
  COMPONENT_IDS,
  type AllocationKey,
  type Amount,
  type BudgetSettings,
  type ModelOverride,
  type Thresholds,
} from '../budget/types.js';
import { AbridgeError } from '../errors.js';
import { DEFAULT_REDACTION, type RedactionSettings } from '../redact/redact.js';
import { SECRET_KINDS } from '../redact/rules.js';
import { PROVIDER_FAMILIES } from '../tokens/family.js';

/** Settings after validation and defaults; `source` names the file they came from (absent for the defaults). */
export interface AbridgeConfig {
  budget: BudgetSettings;
  /** Secret redaction (config key `redaction`); absent means the defaults: on, every built-in kind. */
  redaction?: RedactionSettings;
  source?: string;
}

/**
 * What command-line flags can set; they win over the file. Numbers may come as the flag's text (`"200000"`, `"0.8"`,
 * `"80%"`); they are validated like the file's values, and errors name the flag (`--warn`).
 */
export interface ConfigOverrides {
  model?: string;
  contextWindow?: number | string;
  reserveTokens?: number | string;
  thresholds?: Partial<Record<keyof Thresholds, number | string>>;
  prefixTokens?: number | string;
  /** A models.dev-shaped model catalog file, read over the bundled one (the caller resolves a relative path). */
  catalog?: string;
}

/** The flag that sets each override (used in error messages). */
export const OVERRIDE_FLAGS: Readonly<Record<string, string>> = {
  model: '--model',
  contextWindow: '--context-window',
  reserveTokens: '--reserve-tokens',
  prefixTokens: '--prefix-tokens',
  catalog: '--catalog',
  'thresholds.warn': '--warn',
  'thresholds.compact': '--compact',
  'thresholds.block': '--block',
  'thresholds.target': '--target',
};

export const THRESHOLD_KEYS: readonly (keyof Thresholds)[] = ['warn', 'compact', 'block', 'target'];
export const ALLOCATION_KEYS: readonly AllocationKey[] = [...COMPONENT_IDS, 'response'];

// ---------------------------------------------------------------------------------------------------------------------
// Schema. Every field registers the text that says what it allows ("expected …" in messages).

const EXPECTED = new WeakMap<z.ZodType, string>();

/** A schema that says what it allows (for messages) and what it is (for the JSON Schema). */
function leaf<T extends z.ZodType>(schema: T, expected: string, description: string): T {
  const described = schema.describe(description);
  EXPECTED.set(described, expected);
  return described;
}

function field<T extends z.ZodType>(schema: T, expected: string, description: string): z.ZodOptional<T> {
  return leaf(schema, expected, description).optional();
}

/** `"80%"`, `"12.5%"`, `"0.5%"`: above 0%, at most 100%, no sign, no leading zeros. */
const PERCENT_ABOVE_ZERO = /^(?:100(?:\.0+)?|[1-9]\d?(?:\.\d+)?|0\.\d*[1-9]\d*)%$/;
/** `"0%"` … `"100%"`. */
const PERCENT_UP_TO_100 = /^(?:100(?:\.0+)?|(?:0|[1-9]\d?)(?:\.\d+)?)%$/;

const SHARE_EXPECTED = 'a share like "80%" or a number between 0 and 1';
const AMOUNT_EXPECTED = 'a number of tokens (an integer ≥ 0) or a share of the window like "30%" (at most 100%)';
const POSITIVE_TOKENS = 'a positive integer (tokens)';
const TOKENS = 'an integer ≥ 0 (tokens)';
const MODEL_ID = 'a non-empty model id';

const share = () => z.union([z.string().regex(PERCENT_ABOVE_ZERO), z.number().gt(0).lte(1)]);
const amount = () => z.union([z.int().min(0), z.string().regex(PERCENT_UP_TO_100)]);

const THRESHOLD_DESCRIPTIONS: Record<keyof Thresholds, string> = {
  warn: 'Fill level (share of the effective window: window − reserved response) at which abridge warns. Default "80%".',
  compact: 'Fill level at which abridge compacts (archives older history behind a summary). Default "90%".',
  block:
    'Fill level at which the context counts as blocked: another request would risk overflowing the window. Default "98%".',
  target: 'Fill level compaction aims for, below warn, so it does not re-trigger every turn. Default "60%".',
};
const THRESHOLD_ORDER = 'target < warn ≤ compact ≤ block';

function thresholdsSchema(description: string) {
  const t = (k: keyof Thresholds) =>
    field(share(), SHARE_EXPECTED, `${THRESHOLD_DESCRIPTIONS[k]} A share like "80%" or a number in (0, 1].`);
  return field(
    z.strictObject({ warn: t('warn'), compact: t('compact'), block: t('block'), target: t('target') }),
    `an object with any of ${THRESHOLD_KEYS.join(', ')}`,
    description,
  );
}

const ALLOCATION_DESCRIPTIONS: Record<AllocationKey, string> = {
  system: 'the system prompt (base instructions)',
  memory: 'project memory (AGENTS.md, CLAUDE.md and the like)',
  skills: 'skills',
  tools: 'tool definitions',
  knowledgeBase: 'retrieved knowledge-base articles',
  crossIssue: 'context carried over from other tasks or issues',
  summary: 'compaction summaries standing in for archived history',
  recent: 'conversation turns kept verbatim',
  prompt: 'the current user prompt',
  response: 'the response, reserved out of the window',
};

const a = (k: AllocationKey) =>
  field(
    amount(),
    AMOUNT_EXPECTED,
    `Budget for ${ALLOCATION_DESCRIPTIONS[k]}: a number of tokens, or a share of the window like "10%".`,
  );
const allocationShape = {
  system: a('system'),
  memory: a('memory'),
  skills: a('skills'),
  tools: a('tools'),
  knowledgeBase: a('knowledgeBase'),
  crossIssue: a('crossIssue'),
  summary: a('summary'),
  recent: a('recent'),
  prompt: a('prompt'),
  response: a('response'),
} satisfies Record<AllocationKey, unknown>;

const ModelSchema = z
  .strictObject({
    contextWindow: field(z.int().min(1), POSITIVE_TOKENS, "The model's context window in tokens."),
    maxOutputTokens: field(z.int().min(1), POSITIVE_TOKENS, 'The most tokens the model writes in one response.'),
    family: field(
      z.enum(PROVIDER_FAMILIES),
      `one of ${PROVIDER_FAMILIES.map((f) => JSON.stringify(f)).join(', ')}`,
      'Provider family, for tokenizer and request framing: claude, gpt, gemini or other.',
    ),
    aliases: field(
      z.array(leaf(z.string().min(1), MODEL_ID, 'Another id of this model.')),
      'an array of model ids',
      'Other ids this model is known by (e.g. "claude-sonnet-4-5-20250929", "anthropic/claude-sonnet-4-5").',
    ),
    thresholds: thresholdsSchema('Thresholds for this model only, over the top-level ones (any subset).'),
  })
  .describe('Limits of one model; anything left out comes from the built-in catalog.');
EXPECTED.set(ModelSchema, 'an object with any of contextWindow, maxOutputTokens, family, aliases, thresholds');

/** The schema of `abridge.config.json`, as written in the file (percent strings and all). */
export const ConfigFileSchema = z
  .strictObject({
    $schema: field(
      z.string(),
      'a string (the JSON Schema of this file)',
      'The JSON Schema of this file, for editors; ignored by abridge.',
    ),
    model: field(z.string().min(1), MODEL_ID, 'Model assumed when a session does not name one.'),
    contextWindow: field(z.int().min(1), POSITIVE_TOKENS, "Context window in tokens; overrides every model's window."),
    reserveTokens: field(
      z.int().min(0),
      TOKENS,
      "Tokens kept free for the response (at most half the window). Default: the response allocation if set, else the model's maximum output up to 32000.",
    ),
    defaultContextWindow: field(
      z.int().min(1),
      POSITIVE_TOKENS,
      'Context window assumed for a model abridge does not know (reported as such). Default 128000.',
    ),
    defaultMaxOutputTokens: field(
      z.int().min(1),
      POSITIVE_TOKENS,
      'Maximum output assumed for a model abridge does not know. Default 32000.',
    ),
    prefixTokens: field(
      z.int().min(0),
      TOKENS,
      "Tokens of the system prompt and tool definitions an agent sends but its transcript does not record. Default: the agent's known size.",
    ),
    catalog: field(
      z.string().min(1),
      'a non-empty path to a JSON file',
      "A models.dev-shaped model catalog (its api.json, or one provider's object) read over the catalog bundled with abridge: newer models, windows and prices without a new release. A relative path is relative to this file.",
    ),
    models: field(
      z.record(z.string().min(1), ModelSchema),
      'an object mapping non-empty model ids to their settings',
      'Per-model settings, by model id: window, output limit, family, aliases, thresholds. Unknown models can be added here.',
    ),
    thresholds: thresholdsSchema(
      `Fill levels of the effective window (window − reserved response), each a share like "80%" or a number in (0, 1], ordered ${THRESHOLD_ORDER}.`,
    ),
    redaction: field(
      z.strictObject({
        enabled: field(
          z.boolean(),
          'true or false',
          'Redact recognized secrets (API keys, tokens, private keys, passwords in URLs and assignments) before text reaches a summary, an LLM summarizer, a result store, an export or a report. Default true.',
        ),
        disable: field(
          z.array(
            leaf(
              z.enum(SECRET_KINDS as [string, ...string[]]),
              `one of ${SECRET_KINDS.join(', ')}`,
              'A built-in kind of secret not to redact.',
            ),
          ),
          'an array of built-in kinds',
          `Built-in kinds not to redact: any of ${SECRET_KINDS.join(', ')}.`,
        ),
        patterns: field(
          z.array(
            z.strictObject({
              id: leaf(
                z.string().regex(/^[a-z0-9][a-z0-9-]*$/),
                'lowercase letters, digits and "-"',
                'The kind shown in the redaction marker: [REDACTED:<id>].',
              ),
              pattern: leaf(
                z.string().min(1).refine(validRegExp),
                'a valid JavaScript regular expression',
                'A regular expression matching exactly the secret.',
              ),
              flags: field(
                z.string().regex(/^[imsuy]*$/),
                'regular expression flags among i, m, s, u, y',
                'Flags of the expression (g is always added).',
              ),
            }),
          ),
          'an array of {id, pattern, flags?}',
          'Extra patterns of your own, redacted as [REDACTED:<id>].',
        ),
      }),
      'an object with any of enabled, disable, patterns',
      'Secret redaction (on by default): what abridge redacts from what it writes out. Original transcript records written back to their own file are left as they were.',
    ),
    allocations: field(
      z.union([
        z
          .literal('seed')
          .describe(
            'The seed plan: system 5%, skills 3%, knowledgeBase 3%, crossIssue 2%, summary 10%, recent 30%, prompt 2%, response 45%.',
          ),
        z
          .strictObject(allocationShape)
          .describe(
            'Budgets per component: a number of tokens, or a share of the window like "10%". Shares add up to at most 100%.',
          ),
      ]),
      '"seed" or an object of budgets per component (a number of tokens or a share like "10%")',
      'Budgets per component of the context: "seed" for the seed plan, or an object of token counts and shares of the window. None by default.',
    ),
  })
  .meta({
    title: 'abridge configuration',
    description: 'Configuration of abridge (context-window management for LLM agents): abridge.config.json.',
  });

export type ConfigFile = z.input<typeof ConfigFileSchema>;

const OverridesSchema = ConfigFileSchema.pick({
  model: true,
  contextWindow: true,
  reserveTokens: true,
  thresholds: true,
  prefixTokens: true,
  catalog: true,
});

/** The published JSON Schema of `abridge.config.json` (draft 2020-12; `schema/abridge.config.schema.json`). */
export function configJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(ConfigFileSchema, { target: 'draft-2020-12', io: 'input' }) as Record<string, unknown>;
}

// ---------------------------------------------------------------------------------------------------------------------
// Defaults

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/** The settings when there is no configuration file (frozen: copy before changing). */
export const DEFAULT_CONFIG: AbridgeConfig = deepFreeze({ budget: buildBudget({}) });

function validRegExp(s: string): boolean {
  try {
    new RegExp(s);
    return true;
  } catch {
    return false;
  }
}

function buildRedaction(raw: ConfigFile): RedactionSettings {
  const r = raw.redaction ?? {};
  return {
    enabled: r.enabled ?? DEFAULT_REDACTION.enabled,
    disable: [...(r.disable ?? DEFAULT_REDACTION.disable)],
    patterns: (r.patterns ?? []).map((p) => ({
      id: p.id,
      pattern: p.pattern,
      ...(p.flags !== undefined ? { flags: p.flags } : {}),
    })),
  };
}

// ---------------------------------------------------------------------------------------------------------------------
// Validation

type Path = readonly PropertyKey[];
type Problems = { problems: string[]; dirty: (prefix: Path) => boolean };

/** Validates a parsed configuration object and applies defaults; throws `INVALID_CONFIG` listing every problem. */
export function parseConfig(value: unknown, source: string): AbridgeConfig {
  const result = validateConfig(value, source);
  if (result.problems) throw new AbridgeError('INVALID_CONFIG', result.problems.join('\n'));
  return result.config;
}

/** Like parseConfig, without throwing: the configuration, or every problem (one message each). */
export function validateConfig(
  value: unknown,
  source: string,
): { config: AbridgeConfig; problems?: undefined } | { config?: undefined; problems: string[] } {
  if (!isPlainObject(value))
    return { problems: [`${source}: expected a JSON object at top level, got ${render(value)}`] };
  const at = (path: Path) => (path.length ? `${source}: ${pathText(path)}` : source);
  const { problems, dirty } = schemaProblems(ConfigFileSchema, value, at, source);
  const raw = value as ConfigFile;

  if (!dirty(['thresholds'])) {
    const global = {} as Slots;
    for (const k of THRESHOLD_KEYS) {
      const set = raw.thresholds?.[k];
      global[k] =
        set === undefined
          ? {
              value: DEFAULT_THRESHOLDS[k],
              raw: DEFAULT_THRESHOLDS[k],
              name: `thresholds.${k}`,
              where: at(['thresholds', k]),
              rank: 0,
              isDefault: true,
            }
          : { value: toShare(set), raw: set, name: `thresholds.${k}`, where: at(['thresholds', k]), rank: 1 };
    }
    problems.push(...orderProblems(global));
    if (isPlainObject(raw.models) && !dirty(['models'])) {
      for (const [id, model] of Object.entries(raw.models)) {
        if (!model.thresholds) continue;
        const slots = { ...global };
        for (const k of THRESHOLD_KEYS) {
          const set = model.thresholds[k];
          const path = ['models', id, 'thresholds', k];
          if (set !== undefined)
            slots[k] = { value: toShare(set), raw: set, name: pathText(path), where: at(path), rank: 2 };
        }
        problems.push(...orderProblems(slots, 2));
      }
    }
  }

  if (isPlainObject(raw.allocations) && !dirty(['allocations'])) {
    const shares = Object.entries(raw.allocations).filter((e): e is [string, string] => typeof e[1] === 'string');
    const total = shares.reduce((sum, [, v]) => sum + Number(v.slice(0, -1)), 0);
    if (total > 100 + 1e-9) {
      const list = shares.map(([k, v]) => `${k} ${JSON.stringify(v)}`).join(', ');
      problems.push(
        `${at(['allocations'])}: expected shares adding up to at most 100% of the window, got ${Math.round(total * 1000) / 1000}% (${list})`,
      );
    }
  }

  if (problems.length) return { problems };
  return {
    config: {
      budget: buildBudget(raw),
      ...(raw.redaction !== undefined ? { redaction: buildRedaction(raw) } : {}),
      source,
    },
  };
}

/**
 * `base` with command-line flags applied; flags win over the file. A threshold flag applies to every model: it
 * replaces that threshold in per-model overrides too. Throws `INVALID_CONFIG` naming the flags at fault.
 */
export function mergeConfig(base: AbridgeConfig, overrides: ConfigOverrides): AbridgeConfig {
  const raw: Record<string, unknown> = {};
  if (overrides.model !== undefined) raw.model = overrides.model;
  if (overrides.catalog !== undefined) raw.catalog = overrides.catalog;
  for (const k of ['contextWindow', 'reserveTokens', 'prefixTokens'] as const)
    if (overrides[k] !== undefined) raw[k] = numeric(overrides[k]);
  const flagged: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(overrides.thresholds ?? {})) if (v !== undefined) flagged[k] = numeric(v);
  if (Object.keys(flagged).length) raw.thresholds = flagged;
  const flagAt = (path: Path) => OVERRIDE_FLAGS[pathText(path)] ?? `overrides: ${pathText(path)}`;
  const { problems, dirty } = schemaProblems(OverridesSchema, raw, flagAt, 'overrides');
  const thresholds = flagged as Partial<Record<keyof Thresholds, number | string>>;

  if (!dirty(['thresholds'])) {
    const baseName = base.source ?? 'configuration';
    const global = {} as Slots;
    for (const k of THRESHOLD_KEYS) {
      const set = thresholds[k];
      const v = base.budget.thresholds[k];
      global[k] =
        set === undefined
          ? { value: v, raw: v, name: `thresholds.${k}`, where: `${baseName}: thresholds.${k}`, rank: 1 }
          : {
              value: toShare(set),
              raw: set,
              name: OVERRIDE_FLAGS[`thresholds.${k}`]!,
              where: OVERRIDE_FLAGS[`thresholds.${k}`]!,
              rank: 3,
            };
    }
    problems.push(...orderProblems(global));
    for (const [id, model] of Object.entries(base.budget.models)) {
      const own = withoutKeys(model.thresholds, Object.keys(thresholds));
      if (!own) continue;
      const slots = { ...global };
      for (const [k, v] of Object.entries(own) as [keyof Thresholds, number][]) {
        const name = pathText(['models', id, 'thresholds', k]);
        slots[k] = { value: v, raw: v, name, where: `${baseName}: ${name}`, rank: 2 };
      }
      problems.push(...orderProblems(slots, 2));
    }
  }
  if (problems.length) throw new AbridgeError('INVALID_CONFIG', problems.join('\n'));

  const copy = structuredClone(base.budget); // never shares (or keeps frozen) anything of the base
  const budget: BudgetSettings = {
    ...copy,
    thresholds: { ...copy.thresholds, ...convertThresholds(thresholds) },
    models: Object.fromEntries(
      Object.entries(copy.models).map(([id, m]) => {
        const { thresholds: own, ...rest } = m;
        const kept = withoutKeys(own, Object.keys(thresholds));
        return [id, kept ? { ...rest, thresholds: kept } : rest];
      }),
    ),
  };
  if (raw.model !== undefined) budget.model = raw.model as string;
  if (raw.contextWindow !== undefined) budget.contextWindow = raw.contextWindow as number;
  if (raw.reserveTokens !== undefined) budget.reserveTokens = raw.reserveTokens as number;
  if (raw.prefixTokens !== undefined) budget.prefixTokens = raw.prefixTokens as number;
  if (raw.catalog !== undefined) budget.catalog = raw.catalog as string;
  const out: AbridgeConfig = base.source === undefined ? { budget } : { budget, source: base.source };
  if (base.redaction) out.redaction = structuredClone(base.redaction);
  return out;
}

/** A flag's text as a number when it reads as one (`"0.8"`, `"200000"`); anything else unchanged, for the schema to judge. */
function numeric(v: unknown): unknown {
  return typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v)) ? Number(v) : v;
}

function withoutKeys<T extends object>(obj: T | undefined, keys: string[]): T | undefined {
  if (!obj) return undefined;
  const kept = Object.fromEntries(Object.entries(obj).filter(([k]) => !keys.includes(k))) as T;
  return Object.keys(kept).length ? kept : undefined;
}

/** The schema's problems with `value`, each a message naming the place (`at`) and what is allowed there. */
function schemaProblems(schema: z.ZodType, value: unknown, at: (path: Path) => string, source: string): Problems {
  const result = schema.safeParse(value);
  const issues = flatten(result.success ? [] : result.error.issues);
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const issue of issues) {
    const path = issue.path;
    if (issue.code === 'unrecognized_keys') {
      const allowed = objectKeysAt(schema, path);
      for (const key of issue.keys) {
        const near = suggest(key, allowed);
        const place = path.length ? `in ${pathText(path)}` : 'at top level';
        problems.push(
          `${source}: unknown key ${JSON.stringify(key)} ${place}; ${near ? `did you mean ${JSON.stringify(near)}?` : `expected one of ${allowed.join(', ')}`}`,
        );
      }
    } else if (issue.code === 'invalid_key') {
      const parent = path.slice(0, -1);
      problems.push(
        `${at(parent)}: expected ${expectedAt(schema, parent)}, got the key ${render(path[path.length - 1])}`,
      );
    } else {
      const key = pathText(path);
      if (seen.has(key)) continue;
      seen.add(key);
      problems.push(`${at(path)}: expected ${expectedAt(schema, path)}, got ${render(valueAt(value, path))}`);
    }
  }
  const dirty = (prefix: Path) => issues.some((i) => prefix.every((seg, n) => i.path[n] === seg));
  return { problems, dirty };
}

type Issue = z.core.$ZodIssue;

/**
 * Unions whose value has the shape of exactly one option (an object for `"seed" | {…}`) report that option's own
 * issues, so that a bad entry is named rather than the whole union.
 */
function flatten(issues: readonly Issue[]): Issue[] {
  return issues.flatMap((issue) => {
    if (issue.code !== 'invalid_union') return [issue];
    const fitting = issue.errors.filter(
      (option) => !option.some((i) => i.path.length === 0 && (i.code === 'invalid_type' || i.code === 'invalid_value')),
    );
    if (fitting.length !== 1) return [issue];
    return flatten(fitting[0]!.map((i) => ({ ...i, path: [...issue.path, ...i.path] })));
  });
}

// ---------------------------------------------------------------------------------------------------------------------
// Threshold order

interface Slot {
  value: number;
  raw: unknown;
  /** How another slot's message refers to this one: `thresholds.warn`, `--warn`, `models["x"].thresholds.warn`. */
  name: string;
  /** Start of the message when this slot is at fault. */
  where: string;
  /** default 0, file 1, per-model 2, flag 3: the more specific setting is blamed. */
  rank: number;
  isDefault?: boolean;
}
type Slots = Record<keyof Thresholds, Slot>;

const PAIRS = [
  ['target', 'warn', true],
  ['warn', 'compact', false],
  ['compact', 'block', false],
] as const;

/** One message per neighbouring pair out of order; with `needRank`, only pairs involving a slot of that rank. */
function orderProblems(slots: Slots, needRank?: number): string[] {
  const out: string[] = [];
  for (const [l, r, strict] of PAIRS) {
    const a = slots[l];
    const b = slots[r];
    if (!(strict ? a.value >= b.value : a.value > b.value)) continue;
    if (needRank !== undefined && a.rank !== needRank && b.rank !== needRank) continue;
    const blameLeft = a.rank >= b.rank;
    const [bad, other] = blameLeft ? [a, b] : [b, a];
    const relation = blameLeft ? (strict ? 'is not below' : 'is above') : strict ? 'is not above' : 'is below';
    out.push(
      `${bad.where}: ${render(bad.raw)} ${relation} ${other.name} (${render(other.raw)}${other.isDefault ? ', the default' : ''}); expected ${THRESHOLD_ORDER}`,
    );
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------------
// Conversion (of values the schema has accepted)

function toShare(v: string | number): number {
  return typeof v === 'number' ? v : Number(v.slice(0, -1)) / 100;
}

function toAmount(v: string | number): Amount {
  return typeof v === 'number' ? { tokens: v } : { share: toShare(v) };
}

function convertThresholds(t: Partial<Record<keyof Thresholds, string | number>> | undefined): Partial<Thresholds> {
  const out: Partial<Thresholds> = {};
  for (const k of THRESHOLD_KEYS) if (t?.[k] !== undefined) out[k] = toShare(t[k]);
  return out;
}

function buildBudget(raw: ConfigFile): BudgetSettings {
  const d = DEFAULT_BUDGET_SETTINGS;
  const budget: BudgetSettings = {
    defaultContextWindow: raw.defaultContextWindow ?? d.defaultContextWindow,
    defaultMaxOutputTokens: raw.defaultMaxOutputTokens ?? d.defaultMaxOutputTokens,
    models: Object.fromEntries(
      Object.entries(raw.models ?? {}).map(([id, m]) => {
        const o: ModelOverride = {};
        if (m.contextWindow !== undefined) o.contextWindow = m.contextWindow;
        if (m.maxOutputTokens !== undefined) o.maxOutputTokens = m.maxOutputTokens;
        if (m.family !== undefined) o.family = m.family;
        if (m.aliases !== undefined) o.aliases = [...m.aliases];
        if (m.thresholds !== undefined) o.thresholds = convertThresholds(m.thresholds);
        return [id, o];
      }),
    ),
    thresholds: { ...d.thresholds, ...convertThresholds(raw.thresholds) },
    allocations:
      raw.allocations === 'seed'
        ? Object.fromEntries(Object.entries(SEED_ALLOCATIONS).map(([k, a]) => [k, { ...a }]))
        : Object.fromEntries(
            Object.entries(raw.allocations ?? {}).flatMap(([k, v]) => (v === undefined ? [] : [[k, toAmount(v)]])),
          ),
  };
  if (raw.model !== undefined) budget.model = raw.model;
  if (raw.contextWindow !== undefined) budget.contextWindow = raw.contextWindow;
  if (raw.reserveTokens !== undefined) budget.reserveTokens = raw.reserveTokens;
  if (raw.prefixTokens !== undefined) budget.prefixTokens = raw.prefixTokens;
  if (raw.catalog !== undefined) budget.catalog = raw.catalog;
  return budget;
}

// ---------------------------------------------------------------------------------------------------------------------
// Paths, values, suggestions

/** `thresholds.warn`, `models["qwen-local"].contextWindow`, `models["x"].aliases[0]`. */
export function pathText(path: Path): string {
  let out = '';
  path.forEach((seg, i) => {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if ((path[0] === 'models' && i === 1) || !/^[A-Za-z_$][\w$]*$/.test(String(seg)))
      out += `[${JSON.stringify(String(seg))}]`;
    else out += (out ? '.' : '') + String(seg);
  });
  return out;
}

/** A value as JSON, cut to about 60 characters. */
function render(v: unknown): string {
  if (v === undefined) return 'nothing';
  let s: string;
  try {
    s = typeof v === 'number' && !Number.isFinite(v) ? String(v) : (JSON.stringify(v) ?? String(v));
  } catch {
    s = String(v);
  }
  return s.length > 60 ? `${s.slice(0, 59)}…` : s;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function valueAt(root: unknown, path: Path): unknown {
  let v = root;
  for (const seg of path)
    v = isPlainObject(v) || Array.isArray(v) ? (v as Record<PropertyKey, unknown>)[seg] : undefined;
  return v;
}

function unwrap(s: z.ZodType): z.ZodType {
  while (s instanceof z.ZodOptional) s = s.unwrap() as z.ZodType;
  return s;
}

function child(s: z.ZodType, seg: PropertyKey): z.ZodType | undefined {
  s = unwrap(s);
  if (s instanceof z.ZodObject)
    return Object.hasOwn(s.shape, seg) ? (s.shape as Record<PropertyKey, z.ZodType>)[seg] : undefined;
  if (s instanceof z.ZodRecord) return s.valueType as z.ZodType;
  if (s instanceof z.ZodArray) return s.element as z.ZodType;
  if (s instanceof z.ZodUnion)
    for (const o of s.options as z.ZodType[]) {
      const c = child(o, seg);
      if (c) return c;
    } // prettier-ignore
  return undefined;
}

function schemaAt(root: z.ZodType, path: Path): z.ZodType | undefined {
  let s: z.ZodType | undefined = root;
  for (const seg of path) s = s && child(s, seg);
  return s && unwrap(s);
}

function expectedAt(root: z.ZodType, path: Path): string {
  if (!path.length) return 'a JSON object';
  const s = schemaAt(root, path);
  return (s && EXPECTED.get(s)) ?? 'nothing here';
}

function objectKeysAt(root: z.ZodType, path: Path): string[] {
  const s = schemaAt(root, path);
  const obj = s instanceof z.ZodUnion ? (s.options as z.ZodType[]).find((o) => o instanceof z.ZodObject) : s;
  return obj instanceof z.ZodObject ? Object.keys(obj.shape) : [];
}

/** Optimal-string-alignment distance: Levenshtein plus transposition of neighbours (`wran` → `warn` is 1). */
export function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = d[i]!;
      const prev = d[i - 1]!;
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        row[j] = Math.min(row[j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/** The allowed key nearest to `key` (ignoring case), if near enough to be a likely typo; else the one key it starts. */
export function suggest(key: string, allowed: readonly string[]): string | undefined {
  const k = key.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of allowed) {
    const d = editDistance(k, c.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [c, d];
  }
  if (best !== undefined && bestDistance <= Math.max(2, Math.floor(key.length / 3))) return best;
  const containing = k.length >= 4 ? allowed.filter((c) => c.toLowerCase().includes(k)) : [];
  return containing.length === 1 ? containing[0] : undefined;
}
