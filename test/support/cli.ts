import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

/** The CLI as a user runs it: the built binary (npm test builds first). */
export const CLI = resolve(import.meta.dirname, '../../dist/cli/main.js');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `abridge <args>` in a child process, without colors; `bin` is another build of the CLI (a copy of dist/). */
export function runCli(args: readonly string[], options: { bin?: string; cwd?: string } = {}): CliRun {
  const r = spawnSync(process.execPath, [options.bin ?? CLI, ...args], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, NO_COLOR: '1' },
    ...(options.cwd ? { cwd: options.cwd } : {}),
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A three-message pi session (a request, one `ls` call with usage, its result) as JSONL, without a final newline. */
export const SMALL_PI_SESSION = [
  { type: 'session', version: 3, id: 's1', timestamp: '2026-01-01T00:00:00.000Z', cwd: '/w' },
  {
    type: 'message',
    id: 'a1',
    parentId: null,
    timestamp: '2026-01-01T00:00:01.000Z',
    message: { role: 'user', content: [{ type: 'text', text: 'list files' }], timestamp: 1 },
  },
  {
    type: 'message',
    id: 'a2',
    parentId: 'a1',
    timestamp: '2026-01-01T00:00:02.000Z',
    message: {
      role: 'assistant',
      content: [{ type: 'toolCall', id: 'c1', name: 'bash', arguments: { command: 'ls' } }],
      provider: 'anthropic',
      model: 'claude-sonnet-4-5',
      usage: { input: 10, output: 5, cacheRead: 100, cacheWrite: 20, totalTokens: 135 },
      stopReason: 'toolUse',
    },
  },
  {
    type: 'message',
    id: 'a3',
    parentId: 'a2',
    timestamp: '2026-01-01T00:00:03.000Z',
    message: {
      role: 'toolResult',
      toolCallId: 'c1',
      toolName: 'bash',
      content: [{ type: 'text', text: 'a.ts\nb.ts' }],
      isError: false,
    },
  },
]
  .map((r) => JSON.stringify(r))
  .join('\n');
