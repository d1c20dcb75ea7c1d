/**
 * Fake but well-formed secrets of every kind the redactor knows, generated from a seed (never real credentials), and
 * a canary inside each so a test can tell whether any part of one leaked.
 */

import { prng } from './random-session.js';

export { prng };

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const UPPER_NUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
const B64URL = `${ALNUM}-_`;
const B64 = `${ALNUM}+/`;

export interface PlantedSecret {
  kind: string;
  /** The secret as it would appear in text. */
  secret: string;
  /** A distinctive substring of the secret: if it appears in an output, the secret leaked. */
  probe: string;
  /** A line of text carrying it, as a person or a command would write it. */
  inContext: string;
  /** Recognizable on its own (by its prefix or shape); false for secrets known only by context (a password, an AWS secret key). */
  selfEvident: boolean;
}

const CONTEXTUAL = new Set(['aws-secret-access-key', 'url-password', 'generic-secret', 'bearer-token']);

/** One fake secret of every kind, from `seed`. */
export function fakeSecrets(seed: number): PlantedSecret[] {
  const rnd = prng(seed);
  const pick = (alphabet: string, n: number) =>
    Array.from({ length: n }, () => alphabet[Math.floor(rnd() * alphabet.length)]!).join('');
  const b64url = (s: string) => Buffer.from(s).toString('base64url');
  const out: PlantedSecret[] = [];
  const add = (kind: string, secret: string, inContext: (s: string) => string, probe = secret.slice(-16)) =>
    out.push({ kind, secret, probe, inContext: inContext(secret), selfEvident: !CONTEXTUAL.has(kind) });

  add('anthropic-api-key', `sk-ant-api03-${pick(B64URL, 93)}AA`, (s) => `export ANTHROPIC_API_KEY=${s}`);
  add('openai-api-key', `sk-proj-${pick(B64URL, 156)}`, (s) => `OPENAI_API_KEY="${s}" python run.py`);
  add('openai-api-key', `sk-${pick(ALNUM, 20)}T3BlbkFJ${pick(ALNUM, 20)}`, (s) => `openai.api_key = '${s}'`);
  add(
    'google-api-key',
    `AIza${pick(B64URL.replace(/[-_]/g, ''), 35)}`,
    (s) => `curl "https://generativelanguage.googleapis.com/v1/models?key=${s}"`,
  );
  add('aws-access-key-id', `AKIA${pick(UPPER_NUM, 16)}`, (s) => `aws_access_key_id = ${s}`);
  add('aws-secret-access-key', pick(B64, 40), (s) => `aws_secret_access_key = ${s}`);
  add('github-token', `ghp_${pick(ALNUM, 36)}`, (s) => `git clone https://github.com/acme/app.git # token ${s}`);
  add('github-token', `github_pat_${pick(ALNUM, 22)}_${pick(ALNUM, 59)}`, (s) => `GH_TOKEN=${s} gh pr list`);
  add('github-token', `ghs_${pick(ALNUM, 36)}`, (s) => `Authorization: token ${s}`);
  add(
    'slack-token',
    `xoxb-${1000000000 + Math.floor(rnd() * 8e9)}-${1000000000 + Math.floor(rnd() * 8e9)}-${pick(ALNUM, 24)}`,
    (s) => `SLACK_BOT_TOKEN=${s}`,
  );
  add('stripe-key', `sk_live_${pick(ALNUM, 24)}`, (s) => `stripe.api_key = "${s}"`);
  add('stripe-key', `rk_live_${pick(ALNUM, 24)}`, (s) => `restricted key ${s} for reports`);
  const header = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  const payload = b64url(JSON.stringify({ sub: pick(ALNUM, 12), iat: 1700000000 }));
  add('jwt', `${header}.${payload}.${pick(B64URL, 43)}`, (s) => `Cookie: session=${s}`);
  add('bearer-token', pick(B64URL, 40), (s) => `curl -H "Authorization: Bearer ${s}" https://api.example.com`);
  add('url-password', `${pick(ALNUM, 18)}`, (s) => `DATABASE_URL=postgres://app:${s}@db.internal:5432/app`);
  add('generic-secret', `${pick(ALNUM, 24)}`, (s) => `password=${s}`);
  add('generic-secret', `${pick(ALNUM, 32)}`, (s) => `{"api_key": "${s}"}`);
  const body = Array.from({ length: 8 }, () => pick(B64, 64)).join('\n');
  add(
    'private-key',
    `-----BEGIN RSA PRIVATE KEY-----\n${body}\n-----END RSA PRIVATE KEY-----`,
    (s) => `cat ~/.ssh/id_rsa\n${s}`,
    body.slice(70, 100),
  );
  const ossh = Array.from({ length: 6 }, () => pick(B64, 70)).join('\n');
  add(
    'private-key',
    `-----BEGIN OPENSSH PRIVATE KEY-----\n${ossh}\n-----END OPENSSH PRIVATE KEY-----`,
    (s) => s,
    ossh.slice(10, 40),
  );
  return out;
}
