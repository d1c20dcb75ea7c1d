/**
 * kill -9 in the middle of a streaming command: the CLI is spawned on a large generated session and killed (SIGKILL)
 * once what it writes has begun to appear, so that a test can check what a crash leaves behind.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { CLI } from './cli.js';

/** A generated pi session of at least `bytes` (bench/generate.js: the same bytes every run). */
export async function largePiSession(path: string, bytes: number): Promise<string> {
  // @ts-expect-error bench/generate.js is plain JavaScript without types
  const { generatePiSession } = (await import('../../bench/generate.js')) as {
    generatePiSession: (path: string, bytes: number) => Promise<void>;
  };
  await generatePiSession(path, bytes);
  return path;
}

export function sha256(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

export interface KillOutcome {
  /** True when the process was killed while running; false when it had already finished (then nothing was cut). */
  killed: boolean;
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

/**
 * Runs `abridge <args>`, polls `begun()` every few milliseconds, and sends SIGKILL as soon as it is true (the command
 * has started writing). Resolves when the process is gone.
 */
export function killWhen(args: readonly string[], begun: () => boolean, timeoutMs = 60_000): Promise<KillOutcome> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, NO_COLOR: '1' },
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    let killed = false;
    const started = Date.now();
    const poll = setInterval(() => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      if (begun()) {
        killed = child.kill('SIGKILL');
        clearInterval(poll);
      } else if (Date.now() - started > timeoutMs) {
        clearInterval(poll);
        child.kill('SIGKILL');
        fail(new Error(`abridge ${args.join(' ')}: nothing began to be written in ${timeoutMs} ms`));
      }
    }, 2);
    child.on('error', fail);
    child.on('close', (code, signal) => {
      clearInterval(poll);
      done({ killed: killed && signal === 'SIGKILL', code, signal, stderr });
    });
  });
}
