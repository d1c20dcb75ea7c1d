import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createRedactor, redactSecrets, redactSerialized } from '../src/redact/redact.js';
import { randomOutput } from './support/random-session.js';
import { fakeSecrets, type PlantedSecret } from './support/secrets.js';

/**
 * Attacks on the redaction: a planted secret of any kind (every issuer, the 40 generic forms, keys, URLs, basic
 * credentials…) at a random position of random text, written the ways text reaches abridge — raw, inside code, in a
 * URL, JSON-escaped once or twice, in a JSONL transcript line, with Windows line ends — and nothing of it may survive;
 * serialized JSON stays valid. ABRIDGE_FUZZ_CASES sets the number of cases (default 300; `npm run fuzz` runs 4,000).
 */

const CASES = Number(process.env.ABRIDGE_FUZZ_CASES ?? 300);
const POOL: PlantedSecret[] = [1, 2, 3].flatMap((seed) => fakeSecrets(500 + seed));
const redact = createRedactor();

type Encoding = 'raw' | 'code' | 'url' | 'json' | 'json2' | 'jsonl' | 'crlf' | 'markdown';
const ENCODINGS: Encoding[] = ['raw', 'code', 'url', 'json', 'json2', 'jsonl', 'crlf', 'markdown'];

/** The secret's line as it would be written in `encoding`, inside `before` and `after`. */
function encode(s: PlantedSecret, encoding: Encoding, before: string, after: string): string {
  // A secret known only by its context keeps it; a self-evident one may stand alone.
  const line = s.selfEvident && encoding !== 'raw' ? s.secret : s.inContext;
  const text = `${before}\n${line}\n${after}`;
  switch (encoding) {
    case 'raw':
      return text;
    case 'code':
      return s.selfEvident
        ? `${before}\nconst client = new Client({ key: "${s.secret}" });\n${after}`
        : `${before}\n\`\`\`sh\n${s.inContext}\n\`\`\`\n${after}`;
    case 'url':
      return s.selfEvident ? `${before} see https://example.com/cb?state=1&k=${s.secret}#x ${after}` : text;
    case 'json':
      return JSON.stringify({ role: 'tool', content: text });
    case 'json2':
      return JSON.stringify({ arguments: JSON.stringify({ command: text }) });
    case 'jsonl':
      return `${JSON.stringify({ type: 'message', message: { role: 'user', content: [{ type: 'text', text }] } })}\n${JSON.stringify({ type: 'message', message: { role: 'assistant', content: after } })}\n`;
    case 'crlf':
      return text.replace(/\n/g, '\r\n');
    case 'markdown':
      return `${before}\n> **Credential:** \`${line}\`\n${after}`;
  }
}

const isJson = (e: Encoding) => e === 'json' || e === 'json2' || e === 'jsonl';

describe('attack: planted secrets in random positions and encodings', () => {
  it(`never leaves any part of a planted secret (${CASES} cases)`, () => {
    fc.assert(
      fc.property(
        fc.nat(POOL.length - 1),
        fc.constantFrom(...ENCODINGS),
        fc.nat(100_000),
        fc.nat(1500),
        fc.nat(1500),
        (i, encoding, seed, beforeChars, afterChars) => {
          const s = POOL[i]!;
          const before = randomOutput(seed, beforeChars);
          const after = randomOutput(seed + 1, afterChars);
          const text = encode(s, encoding, before, after);
          const out = isJson(encoding) ? redactSerialized(text, redact) : redactSecrets(text);
          expect(out.includes(s.probe), `${s.kind} (${encoding}) survived: ${JSON.stringify(s.inContext)}`).toBe(false);
          expect(out).toContain(`[REDACTED:`);
          // Idempotent, and serialized JSON stays valid (each line of a transcript).
          expect(isJson(encoding) ? redactSerialized(out, redact) : redactSecrets(out)).toBe(out);
          if (isJson(encoding))
            for (const line of out.trimEnd().split('\n')) expect(() => JSON.parse(line)).not.toThrow();
        },
      ),
      { numRuns: CASES, seed: Number(process.env.ABRIDGE_FUZZ_SEED ?? 34) },
    );
  });

  it(`leaves text without a secret byte for byte as it was (${CASES} cases)`, () => {
    fc.assert(
      fc.property(fc.nat(100_000), fc.nat(4000), fc.boolean(), (seed, chars, json) => {
        const text = randomOutput(seed, chars);
        const doc = json ? `${JSON.stringify({ type: 'message', content: text })}\n` : text;
        expect(json ? redactSerialized(doc, redact) : redactSecrets(doc)).toBe(doc);
      }),
      { numRuns: CASES, seed: Number(process.env.ABRIDGE_FUZZ_SEED ?? 35) },
    );
  });
});
