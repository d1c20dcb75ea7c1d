#!/usr/bin/env node
/**
 * The package's types as its users meet them, checked by the type checker itself (npm run typecheck:consumers, a step
 * of `npm test` after the build; not inside a test's timeout). Needs dist/ (npm run build).
 *
 * 1. Every ```ts block of README.md and docs/*.md type-checks against the built package: `import … from 'abridge-context'`
 *    resolves through package.json `exports` to dist/, as it does for a user (the blocks are written to .readme-check/
 *    inside the package folder, so that `abridge-context` is a self-reference and the SDKs resolve from its node_modules).
 * 2. A consumer project beside nothing of ours (abridge and the official SDKs installed as links, as npm lays them out):
 *    good.ts passes `toAnthropicRequest(...)` straight to `client.messages.create(...)`, the OpenAI bodies to
 *    `chat.completions.create` / `responses.create`, and reads the replies back: tsc must accept it. bad.ts mixes the
 *    providers up, one misuse per line marked `// BAD n`: tsc must refuse every marked line and no other, so the check
 *    fails when the types drift apart.
 *
 * The two projects are checked by two tsc processes running side by side. Exits 1 naming each failure as file:line
 * (the Markdown file and line for a documentation block).
 *
 * A block that imports a host library needing a newer Node than this project's CI (NODE22_ONLY: Mastra) is set aside,
 * and said so, when that library is not installed; scripts/node22-check.sh installs it and runs this script with
 * ABRIDGE_REQUIRE_ALL_BLOCKS=1, where every block is checked. A block importing any other package that is not
 * installed is a failure.
 */
import { spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

const GOOD = `
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { activeMessages, contextOverflow, type Session, type Usage } from 'abridge-context';
import { anthropicClient, fromAnthropicMessage, toAnthropicRequest } from 'abridge-context/anthropic';
import { chatParams, fromOpenAIChatCompletion, fromOpenAIResponse, openaiClient, responsesParams, toOpenAIChatRequest, toOpenAIResponsesRequest } from 'abridge-context/openai';
import type { ChatRequestBody, ResponsesRequestBody } from 'abridge-context';

export async function turn(session: Session, anthropic: Anthropic, openai: OpenAI): Promise<Usage[]> {
  const messages = activeMessages(session);
  const usages: Usage[] = [];
  try {
    const reply = await anthropic.messages.create(
      toAnthropicRequest(messages, {
        model: 'claude-sonnet-4-5',
        maxOutputTokens: 8192,
        system: [{ text: 'You are a coding agent.', cache: true }, { text: 'Context: 41% full.' }],
        tools: [{ name: 'read', description: 'Read a file', inputSchema: { type: 'object', properties: { path: { type: 'string' } } } }],
        providerTools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }],
        cacheTools: true,
        cacheConversation: true,
        extra: { temperature: 0.2 },
      }),
    );
    const a = fromAnthropicMessage(reply);
    if (a.usage) usages.push(a.usage);
    const stream = anthropic.messages.stream(toAnthropicRequest(messages, { model: 'claude-haiku-4-5', maxOutputTokens: 1024 }));
    const final: Anthropic.Message = await stream.finalMessage();
    usages.push(fromAnthropicMessage(final).usage!);
  } catch (err) {
    const overflow = contextOverflow(err);
    if (overflow?.promptTokens !== undefined && overflow.limit !== undefined) console.log(overflow.promptTokens - overflow.limit);
  }
  const completion = await openai.chat.completions.create(
    toOpenAIChatRequest(messages, { model: 'gpt-5', maxOutputTokens: 4096, tools: [{ name: 'ls', inputSchema: { type: 'object' } }], extra: { reasoning_effort: 'low' } }),
  );
  const c = fromOpenAIChatCompletion(completion);
  if (c.usage) usages.push(c.usage);
  const response = await openai.responses.create(
    toOpenAIResponsesRequest(messages, { model: 'gpt-5', maxOutputTokens: 4096, system: 'Be brief.', providerTools: [{ type: 'web_search' }], extra: { store: false, include: ['reasoning.encrypted_content'] } }),
  );
  const r = fromOpenAIResponse(response);
  const next = [...messages, r.message];
  console.log(next.length, r.finish, r.stopReason);
  await anthropicClient({ model: 'claude-haiku-4-5' });
  await openaiClient({ model: 'gpt-5-mini', api: 'responses' });
  return usages;
}

// Streaming: prepare().request through chatParams / responsesParams with {stream: true}, to the SDK's .stream() helper
// and to create({stream: true}); the non-streaming form still answers a ChatCompletion / Response.
export async function streamed(chat: ChatRequestBody, responses: ResponsesRequestBody, openai: OpenAI): Promise<Usage[]> {
  const usages: Usage[] = [];
  const c1: OpenAI.Chat.ChatCompletion = await openai.chat.completions.stream(chatParams(chat, { stream: true })).finalChatCompletion();
  const c2: OpenAI.Chat.ChatCompletion = await openai.chat.completions.create(chatParams(chat));
  for await (const chunk of await openai.chat.completions.create(chatParams(chat, { stream: true }))) if (chunk.usage) console.log(chunk.usage.prompt_tokens);
  const r1: OpenAI.Responses.Response = await openai.responses.stream(responsesParams(responses, { stream: true })).finalResponse();
  const r2: OpenAI.Responses.Response = await openai.responses.create(responsesParams(responses));
  for await (const event of await openai.responses.create(responsesParams(responses, { stream: true }))) if (event.type === 'response.completed') console.log(event.response.usage?.input_tokens);
  const sent: OpenAI.Chat.ChatCompletionCreateParamsStreaming = chatParams(chat, { stream: true });
  for (const u of [fromOpenAIChatCompletion(c1).usage, fromOpenAIChatCompletion(c2).usage, fromOpenAIResponse(r1).usage, fromOpenAIResponse(r2).usage]) if (u) usages.push(u);
  console.log(sent.stream_options?.include_usage);
  return usages;
}
`;

/** Each line marked `// BAD n` is one misuse tsc must refuse; no other line may have an error. */
const BAD = `
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { Message } from 'abridge-context';
import { fromAnthropicMessage, toAnthropicRequest } from 'abridge-context/anthropic';
import { chatParams, fromOpenAIChatCompletion, responsesParams, toOpenAIChatRequest, toOpenAIResponsesRequest } from 'abridge-context/openai';
import type { ChatRequestBody, ResponsesRequestBody } from 'abridge-context';

export async function wrong(messages: Message[], anthropic: Anthropic, openai: OpenAI, chatBody: ChatRequestBody, respBody: ResponsesRequestBody) {
  const chat = toOpenAIChatRequest(messages, { model: 'gpt-5', maxOutputTokens: 1 });
  const resp = toOpenAIResponsesRequest(messages, { model: 'gpt-5', maxOutputTokens: 1 });
  const anth = toAnthropicRequest(messages, { model: 'claude', maxOutputTokens: 1 });
  await anthropic.messages.create(chat); // BAD 1
  await openai.chat.completions.create(anth); // BAD 2
  await openai.responses.create(chat); // BAD 3
  fromAnthropicMessage(await openai.chat.completions.create(chat)); // BAD 4
  fromOpenAIChatCompletion(await anthropic.messages.create(anth)); // BAD 5
  await openai.chat.completions.create(resp); // BAD 6
  toAnthropicRequest(messages, { model: 'claude', maxOutputTokens: 1, providerTools: [{ type: 'not_a_tool' }] }); // BAD 7
  const streamed: OpenAI.Chat.ChatCompletion = await openai.chat.completions.create(chatParams(chatBody, { stream: true })); // BAD 8
  const completed: OpenAI.Responses.Response = await openai.responses.create(responsesParams(respBody, { stream: true })); // BAD 9
  await openai.responses.stream(chatParams(chatBody, { stream: true })); // BAD 10
  await openai.chat.completions.stream(responsesParams(respBody, { stream: true })); // BAD 11
  console.log(streamed, completed);
}
`;

/** The ```ts blocks of a Markdown text, with the line of the text each block's first line is on (1-based). */
function typescriptBlocks(markdown) {
  const out = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (!/^```(ts|typescript)\s*$/.test(lines[i])) continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && !lines[end].startsWith('```')) end++;
    out.push({ line: start + 1, code: lines.slice(start, end).join('\n') });
    i = end;
  }
  return out;
}

/** Libraries whose current releases need Node ≥ 22 (not installed on Node 20): their blocks wait for the Node 22 check. */
const NODE22_ONLY = new Set(['@mastra/core']);

/** The packages a block imports (bare specifiers, by package name: `@scope/name` or `name`). */
function importedPackages(code) {
  const names = new Set();
  for (const m of code.matchAll(/(?:from|import)\s*\(?\s*['"]([^'"./][^'"]*)['"]/g)) {
    const parts = m[1].split('/');
    const name = m[1].startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
    if (!name.startsWith('node:')) names.add(name);
  }
  return [...names];
}

/** Whether a package resolves from the package folder (abridge-context itself: a self-reference). */
function installed(name) {
  return name === 'abridge-context' || existsSync(join(ROOT, 'node_modules', name, 'package.json'));
}

/** The Markdown files whose blocks are checked: README.md and docs/*.md, as paths relative to the package. */
function markdownFiles() {
  const docs = existsSync(join(ROOT, 'docs'))
    ? readdirSync(join(ROOT, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .sort()
        .map((f) => `docs/${f}`)
    : [];
  return ['README.md', ...docs];
}

/** Runs tsc on a project; resolves with its exit code and output. */
function tsc(project, cwd) {
  return new Promise((done) => {
    const child = spawn(process.execPath, [TSC, '--noEmit', '-p', project], { cwd });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => done({ code: code ?? 1, out }));
  });
}

/** tsc's `file(line,col): error TSn: message` lines (continuation lines of a message are joined to it). */
function diagnostics(out) {
  const found = [];
  for (const line of out.split('\n')) {
    const m = /^(.+?)\((\d+),(\d+)\): (error TS\d+: .*)$/.exec(line);
    if (m) found.push({ file: m[1], line: Number(m[2]), col: Number(m[3]), message: m[4] });
    else if (found.length > 0 && line.trim()) found[found.length - 1].message += ` ${line.trim()}`;
    else if (line.trim()) found.push({ file: '', line: 0, col: 0, message: line.trim() });
  }
  return found;
}

const COMPILER_OPTIONS_DOCS = {
  module: 'nodenext',
  moduleResolution: 'nodenext',
  target: 'es2022',
  strict: true,
  noEmit: true,
  skipLibCheck: true,
  types: ['node'],
};

const COMPILER_OPTIONS_CONSUMER = {
  target: 'ES2022',
  module: 'NodeNext',
  moduleResolution: 'NodeNext',
  lib: ['ES2023', 'DOM', 'DOM.Iterable'],
  types: [],
  strict: true,
  noEmit: true,
  skipLibCheck: true,
};

/** Writes the documentation blocks' project; returns how to map its files back to Markdown lines. */
function documentationProject(dir) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir);
  const origin = new Map();
  const setAside = [];
  const missing = [];
  let blocks = 0;
  let readme = 0;
  const requireAll = process.env.ABRIDGE_REQUIRE_ALL_BLOCKS === '1';
  for (const md of markdownFiles()) {
    const found = typescriptBlocks(readFileSync(join(ROOT, md), 'utf8'));
    for (const b of found) {
      const absent = importedPackages(b.code).filter((p) => !installed(p));
      if (absent.length > 0) {
        if (!requireAll && absent.every((p) => NODE22_ONLY.has(p)))
          setAside.push(`${md}:${b.line} (${absent.join(', ')})`);
        else missing.push(`${md}:${b.line}: imports ${absent.join(', ')}, which is not installed`);
        continue;
      }
      const name = `${md.replace(/[^A-Za-z0-9]+/g, '-')}-line-${b.line}.ts`;
      writeFileSync(join(dir, name), `${b.code}\nexport {};\n`);
      origin.set(name, { md, line: b.line });
      blocks++;
      if (md === 'README.md') readme++;
    }
  }
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: COMPILER_OPTIONS_DOCS, include: ['*.ts'] }),
  );
  return { origin, blocks, readme, setAside, missing };
}

/** Writes the consumer project (good.ts and bad.ts) in a temporary folder with abridge and the SDKs linked in. */
function consumerProject() {
  const dir = mkdtempSync(join(tmpdir(), 'abridge-consumer-'));
  mkdirSync(join(dir, 'node_modules/@anthropic-ai'), { recursive: true });
  symlinkSync(ROOT, join(dir, 'node_modules/abridge-context'), 'dir');
  symlinkSync(join(ROOT, 'node_modules/@anthropic-ai/sdk'), join(dir, 'node_modules/@anthropic-ai/sdk'), 'dir');
  symlinkSync(join(ROOT, 'node_modules/openai'), join(dir, 'node_modules/openai'), 'dir');
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', type: 'module', private: true }));
  writeFileSync(join(dir, 'good.ts'), GOOD);
  writeFileSync(join(dir, 'bad.ts'), BAD);
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: COMPILER_OPTIONS_CONSUMER, files: ['good.ts', 'bad.ts'] }),
  );
  return dir;
}

async function main() {
  const started = performance.now();
  const missing = ['dist/index.d.ts', 'dist/adapters/anthropic.d.ts', 'dist/adapters/openai.d.ts'].filter(
    (f) => !existsSync(join(ROOT, f)),
  );
  if (missing.length > 0) {
    console.error(`typecheck:consumers: ${missing.join(', ')} not found: run \`npm run build\` first (npm test does)`);
    process.exit(1);
  }
  // Against stale declarations the errors would be about code that is no longer there: say so instead.
  const built = statSync(join(ROOT, 'dist/index.d.ts')).mtimeMs;
  const newer = readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' }).find(
    (f) => f.endsWith('.ts') && !/\.test\.ts$/.test(f) && statSync(join(ROOT, 'src', f)).mtimeMs > built,
  );
  if (newer) {
    console.error(`typecheck:consumers: dist/ is older than src/${newer}: run \`npm run build\` first (npm test does)`);
    process.exit(1);
  }
  const docsDir = join(ROOT, '.readme-check');
  const docs = documentationProject(docsDir);
  const consumerDir = consumerProject();
  const failures = [];
  try {
    const [docsRun, consumerRun] = await Promise.all([
      tsc(join(docsDir, 'tsconfig.json'), ROOT),
      tsc('tsconfig.json', consumerDir),
    ]);

    // The README shows its agent loop; README and docs/ hold at least the six blocks they held when this was written.
    failures.push(...docs.missing);
    if (docs.readme < 1) failures.push('README.md: no ```ts block to check (its agent loop?)');
    if (docs.blocks < 6) failures.push(`README.md, docs/*.md: ${docs.blocks} \`\`\`ts block(s), expected at least 6`);
    for (const d of diagnostics(docsRun.out)) {
      const name = d.file.replace(/^.*[\\/]/, '');
      const from = docs.origin.get(name);
      failures.push(
        from ? `${from.md}:${from.line + d.line - 1}:${d.col}: ${d.message}` : `${d.file || 'tsc'}: ${d.message}`,
      );
    }
    if (docsRun.code !== 0 && diagnostics(docsRun.out).length === 0)
      failures.push(`tsc on the documentation blocks exited ${docsRun.code}`);

    const badLines = BAD.split('\n');
    const expected = [...BAD.matchAll(/\/\/ BAD (\d+)/g)].map((m) => Number(m[1]));
    const refused = new Set();
    for (const d of diagnostics(consumerRun.out)) {
      const file = d.file.replace(/^.*[\\/]/, '');
      if (file === 'bad.ts') {
        const marker = /\/\/ BAD (\d+)/.exec(badLines[d.line - 1] ?? '');
        if (marker) refused.add(Number(marker[1]));
        else failures.push(`consumer bad.ts:${d.line}:${d.col}: an error on a line not marked BAD: ${d.message}`);
      } else {
        failures.push(`consumer ${file || 'tsc'}${d.line ? `:${d.line}:${d.col}` : ''}: ${d.message}`);
      }
    }
    for (const n of expected) {
      if (refused.has(n)) continue;
      const line = badLines.findIndex((l) => l.endsWith(`// BAD ${n}`)) + 1;
      failures.push(`consumer bad.ts:${line}: accepted, but tsc must refuse it: ${badLines[line - 1].trim()}`);
    }
  } finally {
    rmSync(docsDir, { recursive: true, force: true });
    rmSync(consumerDir, { recursive: true, force: true });
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  if (failures.length > 0) {
    for (const f of failures) console.error(f);
    console.error(`typecheck:consumers: ${failures.length} failure(s) (${seconds} s)`);
    process.exit(1);
  }
  if (docs.setAside.length > 0)
    console.log(
      `typecheck:consumers: set aside for scripts/node22-check.sh (a library that needs Node >= 22, not installed here): ${docs.setAside.join('; ')}`,
    );
  console.log(
    `typecheck:consumers: ${docs.blocks} TypeScript block(s) of ${markdownFiles().join(', ')} type-check against dist/; ` +
      `the consumer project compiles and all ${BAD.match(/\/\/ BAD \d+/g).length} misuses of bad.ts are refused (${seconds} s)`,
  );
}

await main();
