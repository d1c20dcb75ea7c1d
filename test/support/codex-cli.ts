/**
 * The real Codex CLI as a client of what abridge writes: a rollout is put where Codex keeps its sessions
 * (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`) in a temporary CODEX_HOME whose config points the
 * built-in `openai` provider at a loopback server speaking the Responses wire format (`openai_base_url`), then
 * `codex exec resume <id> <prompt>` runs and the requests it sends are captured. The binary comes from
 * `scripts/install-codex.sh` (found through $ABRIDGE_CODEX_BIN, which `.ci/run` exports); without it the tests that need
 * it skip and say why.
 */
import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLoopback, type Loopback, type LoopbackRequest } from './loopback.js';

/** The Codex CLI version the project installs and tests against. */
export const CODEX_VERSION = '0.171.0';

/** The CLI binary from $ABRIDGE_CODEX_BIN, or why there is none (for a skip message). */
export function codexBinary(): { bin: string } | { reason: string } {
  const bin = process.env.ABRIDGE_CODEX_BIN;
  if (!bin)
    return {
      reason: 'ABRIDGE_CODEX_BIN is not set (run scripts/install-codex.sh and export what it prints; .ci/run does)',
    };
  try {
    accessSync(bin, constants.X_OK);
  } catch {
    return { reason: `ABRIDGE_CODEX_BIN=${bin} is not an executable file (run scripts/install-codex.sh)` };
  }
  return { bin };
}

type Item = Record<string, unknown>;

/** A loopback Responses endpoint: `POST …/responses` streams one assistant message, "ok"; anything else `{}`. */
async function startResponsesStub(): Promise<Loopback> {
  let n = 0;
  return startLoopback((req: LoopbackRequest) => {
    if (req.method !== 'POST' || !req.url.endsWith('/responses')) return { json: {} };
    const b = (typeof req.body === 'object' && req.body !== null ? req.body : {}) as Item;
    n++;
    const msg = {
      type: 'message',
      id: `msg_loopback_${n}`,
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: 'ok', annotations: [] }],
    };
    const usage = {
      input_tokens: 1,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 1,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 2,
    };
    const response = {
      id: `resp_loopback_${n}`,
      object: 'response',
      created_at: 1,
      status: 'in_progress',
      model: typeof b.model === 'string' ? b.model : 'gpt-5.4',
      output: [] as unknown[],
      usage: null as unknown,
    };
    const event = (type: string, data: Item) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
    return {
      sse: [
        event('response.created', { response }),
        event('response.output_item.added', { output_index: 0, item: { ...msg, status: 'in_progress', content: [] } }),
        event('response.output_text.delta', { item_id: msg.id, output_index: 0, content_index: 0, delta: 'ok' }),
        event('response.output_item.done', { output_index: 0, item: msg }),
        event('response.completed', { response: { ...response, status: 'completed', output: [msg], usage } }),
      ].join(''),
    };
  });
}

export interface CodexResumeRun {
  code: number | null;
  stdout: string;
  stderr: string;
  requests: LoopbackRequest[];
  /** The input of the request that carried the resumed conversation and the prompt, when there was one. */
  input?: Item[];
}

function run(
  bin: string,
  args: string[],
  o: { cwd: string; env: NodeJS.ProcessEnv; stdin?: string },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      bin,
      args,
      { cwd: o.cwd, env: o.env, timeout: 120_000, maxBuffer: 32 << 20 },
      (err, out, e) => {
        const code = err
          ? typeof (err as { code?: unknown }).code === 'number'
            ? (err as { code: number }).code
            : null
          : 0;
        resolve({ code, stdout: String(out), stderr: String(e) });
      },
    );
    child.stdin?.end(o.stdin ?? '');
  });
}

/**
 * Writes `rollout` as session `sessionId` in a fresh CODEX_HOME and runs `codex exec resume <sessionId> <prompt>`
 * against a loopback Responses endpoint (logged in with a dummy API key; offline, one turn).
 */
export async function resumeWithCodex(
  bin: string,
  rollout: string,
  sessionId: string,
  prompt: string,
  model = 'gpt-5.4',
): Promise<CodexResumeRun> {
  const root = await mkdtemp(join(tmpdir(), 'abridge-codex-'));
  const stub = await startResponsesStub();
  try {
    const home = join(root, 'home');
    const codexHome = join(home, '.codex');
    const project = join(root, 'project');
    const day = join(codexHome, 'sessions', '2026', '01', '01');
    await mkdir(project, { recursive: true });
    await mkdir(day, { recursive: true });
    await writeFile(join(day, `rollout-2026-01-01T00-00-00-${sessionId}.jsonl`), rollout);
    await writeFile(
      join(codexHome, 'config.toml'),
      `model = ${JSON.stringify(model)}\nopenai_base_url = ${JSON.stringify(`${stub.baseURL}/v1`)}\n`,
    );
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, CODEX_HOME: codexHome, NO_COLOR: '1' };
    const login = await run(bin, ['login', '--with-api-key'], { cwd: project, env, stdin: 'sk-test\n' });
    if (login.code !== 0) return { ...login, requests: stub.requests };
    const r = await run(bin, ['exec', '--skip-git-repo-check', 'resume', sessionId, prompt], { cwd: project, env });
    const out: CodexResumeRun = { ...r, requests: stub.requests };
    const input = mainInput(stub.requests, prompt);
    if (input) out.input = input;
    return out;
  } finally {
    await stub.close();
    await rm(root, { recursive: true, force: true });
  }
}

/** The conversation request: the largest `POST …/responses` whose input ends with the prompt. */
function mainInput(requests: readonly LoopbackRequest[], prompt: string): Item[] | undefined {
  let best: Item[] | undefined;
  for (const r of requests) {
    if (r.method !== 'POST' || !r.url.endsWith('/responses')) continue;
    const input = (r.body as { input?: unknown })?.input;
    if (!Array.isArray(input) || input.length === 0) continue;
    if (textOf(input[input.length - 1] as Item) !== prompt) continue;
    if (!best || input.length > best.length) best = input as Item[];
  }
  return best;
}

function textOf(item: Item): string {
  const c = item.content;
  if (typeof c === 'string') return c;
  if (!Array.isArray(c)) return '';
  return c.map((p: Item) => (typeof p.text === 'string' ? p.text : '')).join('');
}

/** What Codex puts around a resumed history of its own: its instructions, skills, environment and project memory. */
const HARNESS = ['<environment_context>', '# AGENTS.md instructions', '<user_instructions>', '<skills_instructions>'];
const isHarness = (item: Item) =>
  item.type === 'message' &&
  (item.role === 'developer' || (item.role === 'user' && HARNESS.some((h) => textOf(item).trimStart().startsWith(h))));

/**
 * The resumed history in what Codex sent: without the prompt, and without what Codex adds before and after a history
 * (its developer messages, skills, environment context), each item as {@link comparableItems} shows it.
 */
export function resumedHistory(input: readonly Item[]): Item[] {
  let from = 0;
  while (from < input.length && input[from]!.type === 'message' && input[from]!.role === 'developer') from++;
  let to = input.length - 1; // the prompt
  while (to > from && isHarness(input[to - 1]!)) to--;
  return comparableItems(input.slice(from, to));
}

/**
 * Items as the model reads them, however they were spelled: a message's content as a list of `{text}` or `{image}`
 * (a string is one text), calls by call id, name and arguments, outputs by call id and their text; ids, statuses and
 * metadata left out. Reasoning items are left out (abridge sends back only reasoning it can sign for: counted apart).
 */
export function comparableItems(items: readonly Item[]): Item[] {
  const out: Item[] = [];
  for (const it of items) {
    if (it.type === 'reasoning') continue;
    if (it.type === 'message') out.push({ type: 'message', role: it.role, content: contentOf(it.content) });
    else if (it.type === 'function_call')
      out.push({ type: 'function_call', call_id: it.call_id, name: it.name, arguments: it.arguments });
    else if (it.type === 'function_call_output')
      out.push({ type: 'function_call_output', call_id: it.call_id, output: contentOf(it.output) });
    else if (it.type === 'compaction') out.push({ type: 'compaction', encrypted_content: it.encrypted_content });
    else out.push(it);
  }
  return out;
}

function contentOf(c: unknown): Item[] {
  if (typeof c === 'string') return [{ text: c }];
  if (!Array.isArray(c)) return [{ other: c }];
  return c.map((p: Item) =>
    typeof p.text === 'string' ? { text: p.text } : p.type === 'input_image' ? { image: p.image_url } : { other: p },
  );
}
