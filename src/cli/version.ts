import { readFileSync } from 'node:fs';
import { packageFile } from '../package-file.js';

function readVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(packageFile('package.json') ?? '', 'utf8')) as { version?: string };
    return pkg.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

export const VERSION = readVersion();
