import { readdirSync } from 'node:fs';
import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AbridgeError } from '../errors.js';
import { readSession } from '../formats/read.js';
import { CORPUS_DIR, corpusAvailable, corpusFiles } from '../../test/support/corpus.js';
import { fixtureTranscripts } from '../../test/support/fixture-transcripts.js';
import { ModelCatalog, normalizeModelId, type ModelInfo } from './catalog.js';

const run = corpusAvailable() ? describe : describe.skip;
if (!corpusAvailable()) console.warn('catalog corpus tests SKIPPED: ../shared/corpus not found (set ABRIDGE_CORPUS)');

interface Seen {
  id: string;
  provider?: string;
  files: Set<string>;
  /** The largest prompt billed for this model in one file. */
  prompt: number;
  reportedWindow?: number;
}

let read: Promise<{ models: Seen[]; unreadable: string[] }> | undefined;
const corpusModels = () =>
  (read ??= readModels(
    readdirSync(CORPUS_DIR, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .flatMap((folder) => corpusFiles(folder.name).map((file) => ({ folder: folder.name, file }))),
  ));

/** Every model the readers find in these files: assistant messages' model, model changes (pi), Codex turn contexts. */
async function readModels(
  files: { folder: string; file: string }[],
): Promise<{ models: Seen[]; unreadable: string[] }> {
  const seen = new Map<string, Seen>();
  const unreadable: string[] = [];
  for (const { folder, file } of files) {
    let session;
    try {
      session = await readSession(file);
    } catch (err) {
      // Formats abridge recognizes but cannot read yet (OpenHands, Copilot CLI, Aider…): their ids are below.
      if (err instanceof AbridgeError && err.code === 'UNSUPPORTED_FORMAT') {
        unreadable.push(basename(file));
        continue;
      }
      throw err;
    }
    const name = `${folder}/${basename(file)}`;
    let current: { id: string; provider?: string } | undefined;
    const note = (id: string, provider: string | undefined) => {
      const key = `${normalizeModelId(id)}\0${provider ?? ''}`;
      let s = seen.get(key);
      if (!s) seen.set(key, (s = { id, files: new Set(), prompt: 0, ...(provider ? { provider } : {}) }));
      s.files.add(name);
      return s;
    };
    const request = (session.extra?.request as { model?: unknown } | undefined)?.model;
    if (typeof request === 'string') note(request, undefined);
    for (const e of session.entries) {
      const m = e.message;
      if (m?.model) current = { id: m.model, ...(m.provider ? { provider: m.provider } : {}) };
      if (e.kind === 'model-change' && e.model?.id)
        current = { id: e.model.id, ...(e.model.provider ? { provider: e.model.provider } : {}) };
      if (!current) continue;
      const s = note(current.id, current.provider);
      const u = m?.usage ?? e.usage;
      if (u) s.prompt = Math.max(s.prompt, u.input + u.cacheRead + u.cacheWrite);
      if (u?.contextWindow) s.reportedWindow = u.contextWindow;
    }
  }
  return { models: [...seen.values()], unreadable };
}

/** A catalog hit, or a rule the result names: never the silent default. */
function expectExplained(info: ModelInfo, what: string): void {
  expect(['catalog', 'inferred', 'transcript'], `${what}: ${info.source} (${info.note ?? 'no note'})`).toContain(
    info.source,
  );
  if (info.source !== 'catalog') expect(info.note, what).toBeTruthy();
  if (info.source === 'inferred' && info.matched) expect(info.note, what).toContain(info.matched);
  expect(info.contextWindow).toBeGreaterThan(0);
}

describe('every model named in the fixture transcripts resolves', () => {
  it('exactly, or by a rule the result states; the window holds every prompt billed', async () => {
    const { models, unreadable } = await readModels(await fixtureTranscripts());
    expect(unreadable).toEqual([]);
    expect(models.map((m) => m.id)).toContain('claude-sonnet-4-5');
    const catalog = new ModelCatalog();
    for (const m of models) {
      const info = catalog.lookup(m.id, { ...(m.provider ? { provider: m.provider } : {}), observedPrompt: m.prompt });
      const what = `${m.id} (${m.provider ?? 'no provider'}; ${[...m.files][0]})`;
      expectExplained(info, what);
      expect(info.source, what).toBe('catalog');
      expect(info.contextWindow, what).toBeGreaterThanOrEqual(m.prompt);
      expect(m.prompt, `${what}: usage read`).toBeGreaterThan(0);
    }
  });

  it('ids named by corpus files abridge has no reader for yet (SOURCES.md) resolve too', () => {
    const catalog = new ModelCatalog();
    for (const [id, source, window] of [
      ['claude-sonnet-4.6', 'catalog', 1_000_000], // GitHub Copilot CLI events
      ['claude-haiku-4-5-20251001', 'catalog', 200_000], // Claude Code subagent progress records
      ['gpt-5.4-mini', 'catalog', 400_000],
      ['gpt-4o-2024-05-13', 'catalog', 128_000], // OpenHands
      ['gpt-4.1', 'catalog', 1_047_576], // Aider
      ['deepseek-v4-flash', 'catalog', 1_000_000], // DeepSeek harness trace
      ['openai/openrouter-llama-4-maverick', 'inferred', undefined], // OpenHands through LiteLLM
      ['lm_studio/qwen3.6-35b-a3b-uncensored-hauhaucs-aggressive', 'inferred', undefined], // Aider on LM Studio
    ] as const) {
      const info = catalog.lookup(id);
      expectExplained(info, id);
      expect(info.source, id).toBe(source);
      if (window) expect(info.contextWindow, id).toBe(window);
    }
  });
});

run('every model named in the corpus resolves', () => {
  it('exactly, or by a rule the result states; the window holds every prompt billed', async () => {
    const { models } = await corpusModels();
    expect(models.length).toBeGreaterThanOrEqual(15); // Claude 4.x, GPT-5.x and Gemini of pi, Claude Code and Codex files
    const catalog = new ModelCatalog();
    const rows: string[] = [];
    for (const m of models) {
      const info = catalog.lookup(m.id, {
        ...(m.provider ? { provider: m.provider } : {}),
        ...(m.reportedWindow ? { reportedWindow: m.reportedWindow } : {}),
        observedPrompt: m.prompt,
      });
      const what = `${m.id} (${m.provider ?? 'no provider'}; ${[...m.files][0]})`;
      expectExplained(info, what);
      expect(info.contextWindow, what).toBeGreaterThanOrEqual(m.prompt);
      rows.push(`${m.id} → ${info.source}${info.matched ? ` ${info.matched}` : ''} ${info.contextWindow}`);
    }
    // The current Claude models of the corpus are plain catalog hits, not guesses from older ones.
    for (const id of [
      'claude-opus-4-6',
      'claude-sonnet-4-6',
      'claude-opus-4-5',
      'claude-sonnet-4-5-20250929',
      'gpt-5.4',
      'gpt-5.5',
      'gpt-5.3-codex-spark',
      'gemini-3-flash-preview',
      'deepseek-v4-flash', // the DeepSeek harness trace
    ]) {
      const m = models.find((s) => s.id === id);
      expect(m, `${id} is read from the corpus`).toBeDefined();
      expect(catalog.lookup(id).source, id).toBe('catalog');
    }
    expect(rows.length).toBe(models.length);
  });

  it('Codex files carry their window; the catalog agrees on the model', async () => {
    const { models } = await corpusModels();
    const codex = models.filter((m) => [...m.files].some((f) => f.startsWith('codex/')));
    expect(codex.length).toBeGreaterThan(0);
    for (const m of codex) {
      expect(m.reportedWindow, m.id).toBeGreaterThan(0);
      expect(new ModelCatalog().lookup(m.id, { reportedWindow: m.reportedWindow! })).toMatchObject({
        source: 'transcript',
        contextWindow: m.reportedWindow,
      });
    }
  });
});
