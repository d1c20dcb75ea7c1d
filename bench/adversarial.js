#!/usr/bin/env node
/**
 * The scanners of untrusted text on an attack and on ordinary text of the same size (issue 34, item 2): for each, the
 * median of 3 runs on 1 MB of the attack its old regular expressions were quadratic (or worse) on, the median of 3 on
 * 1 MB of ordinary text, and their ratio (test/adversarial-text.test.ts asserts it stays ≤ 5, or under 50 ms). The
 * cases are test/support/adversarial.ts, loaded from src/ through tsx. Run through `npm run bench:adversarial`.
 *
 *   node bench/adversarial.js [--size BYTES] [--only REGEXP] [--src DIR] [--json]
 *
 * `--src` times another tree's src/ (e.g. an export of main's) with the same cases; use a smaller `--size` there, a
 * quadratic scan of 1 MB takes minutes.
 */
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tsImport } from 'tsx/esm/api';

const args = process.argv.slice(2);
const opt = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const here = dirname(fileURLToPath(import.meta.url));
const size = Number(opt('--size') ?? 1 << 20);
const only = opt('--only') ? new RegExp(opt('--only'), 'i') : undefined;
const src = resolve(opt('--src') ?? resolve(here, '../src'));

const { medianMs, ordinaryText, scanners } = await tsImport(
  resolve(here, '../test/support/adversarial.ts'),
  import.meta.url,
);
const list = (await scanners(`${src}/`)).filter((s) => !only || only.test(s.name));
for (const s of list) s.run(s.frame(ordinaryText(4096)));

const rows = [];
for (const s of list) {
  const ordinary = medianMs(() => s.run(s.frame(ordinaryText(size))));
  const attack = medianMs(() => s.run(s.frame(s.attack(size))));
  rows.push({ scanner: s.name, attackMs: attack, ordinaryMs: ordinary, ratio: attack / ordinary });
  if (!args.includes('--json'))
    console.log(
      `${s.name.padEnd(100)} ${attack.toFixed(1).padStart(9)} ms ${ordinary.toFixed(1).padStart(8)} ms ${(attack / ordinary).toFixed(2).padStart(7)}×`,
    );
}
if (args.includes('--json')) console.log(JSON.stringify({ src, size, rows }, null, 2));
else
  console.log(
    `\n${list.length} scanners, ${size} characters each: attack (median of 3), ordinary (median of 3), ratio`,
  );
