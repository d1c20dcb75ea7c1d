import { describe, expect, it } from 'vitest';
import { issuerSamples } from '../../test/support/secrets.js';
import { randomOutput } from '../../test/support/random-session.js';
import { findSecrets } from './redact.js';
import { SECRET_RULES } from './rules.js';

/**
 * The redaction's time is linear in the text: 1 MB of adversarial near-matches of each rule family (a prefix repeated,
 * a header without its end, a name without its value…) takes at most 5× the time of 1 MB of ordinary text, both
 * measured in this run (median of 3; below 50 ms a case passes whatever the ratio, timers being coarse there). The
 * ordinary text holds every rule's head once, so that every rule scans it (text without them skips the issuers' rules
 * after one pass, and would make a poor measure of what a rule costs).
 */

const MB = 1 << 20;
const fill = (unit: string) => unit.repeat(Math.ceil(MB / unit.length)).slice(0, MB);

function median3(text: string): number {
  const t: number[] = [];
  for (let i = 0; i < 3; i++) {
    const start = performance.now();
    findSecrets(text);
    t.push(performance.now() - start);
  }
  return t.sort((a, b) => a - b)[1]!;
}

const FAMILIES: Record<string, string[]> = {
  'private-key': [
    '-----BEGIN PRIVATE KEY',
    '-----BEGIN RSA PRIVATE KEY-----\n',
    '-----BEGIN OPENSSH PRIVATE KEY-----\\nb3Bl',
    `-----BEGIN EC PRIVATE KEY-----\n${'MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n'.repeat(20)}`,
  ],
  aws: ['AKIA', 'AKIAABCDEFGHIJKLMNO ', 'ASIA1', 'aws_secret_access_key = ', 'SecretAccessKey": "'],
  'url-password': ['://user:', '://u:p', 'postgres://app:s3cr3t', '?password=', '&sslpassword=x', 'https://a:b'],
  jwt: ['eyJ', 'eyJabcdefghij.', 'eyJabcdefghij.eyJabcdefgh ', 'eyJhbGciOiJIUzI1NiJ9.eyJ'],
  generic: [
    'password=',
    'password=x',
    'SECRET_KEY=',
    'token: ',
    '"api_key": "',
    'passwordpassword',
    'secret_key = ',
    'accessToken = "a',
    '--password ',
    'AccountKey=',
    '_KEY=abcdefgh',
  ],
  'bearer/basic': ['Bearer ', 'Authorization: Basic ', 'curl -u a:', ' -u a:bcd', 'mysql -pX ', 'sshpass -p '],
};

describe('redaction time is linear in the text', () => {
  const heads = ` ${[...new Set(SECRET_RULES.flatMap((r) => (r.head ? [r.head] : [])))].join(' ')} `;
  const ordinary = randomOutput(1, MB).slice(0, MB - heads.length) + heads;
  const jsonOrdinary = JSON.stringify(randomOutput(2, MB)).slice(0, MB - heads.length) + heads;
  // The slower of two ordinary texts (prose and code, and the same serialized as JSON).
  const base = Math.max(median3(ordinary), median3(jsonOrdinary));

  const limit = Math.max(5 * base, 50);
  const report = (family: string, worst: { unit: string; ms: number }) =>
    console.log(
      `linear ${family}: worst ${JSON.stringify(worst.unit)} ${worst.ms.toFixed(0)} ms / ordinary ${base.toFixed(0)} ms = ${(worst.ms / base).toFixed(2)}×`,
    );

  for (const [family, units] of Object.entries(FAMILIES)) {
    it(`${family}: 1 MB of near-matches within 5× ordinary text`, () => {
      let worst = { unit: '', ms: 0 };
      for (const unit of units) {
        const ms = median3(fill(unit));
        if (ms > worst.ms) worst = { unit, ms };
        expect(ms, `${JSON.stringify(unit)}: ${ms.toFixed(0)} ms vs ${base.toFixed(0)} ms`).toBeLessThanOrEqual(limit);
      }
      report(family, worst);
    });
  }

  it('issuers: every prefix repeated, and every near miss repeated, within 5× ordinary text', () => {
    const samples = issuerSamples(3);
    const units = [
      ...samples.map((s) => s.secret.slice(0, Math.min(8, s.secret.length - 1))),
      ...samples.map((s) => `${s.nearMiss} `),
      samples.map((s) => s.secret.slice(0, 6)).join(''),
    ];
    let worst = { unit: '', ms: 0 };
    for (const unit of units) {
      const text = fill(unit);
      // One quick run each; a slow one is measured again (median of 3) before it counts.
      const start = performance.now();
      findSecrets(text);
      let ms = performance.now() - start;
      if (ms > limit) ms = median3(text);
      if (ms > worst.ms) worst = { unit, ms };
      expect(ms, `${JSON.stringify(unit)}: ${ms.toFixed(0)} ms vs ${base.toFixed(0)} ms`).toBeLessThanOrEqual(limit);
    }
    report('issuers', worst);
  });
});
