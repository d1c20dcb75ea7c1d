import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fakeSecrets, issuerSamples } from '../../test/support/secrets.js';
import { createRedactor, findSecrets, redactMessage, redactSecrets, redactValue } from './redact.js';
import { SECRET_KINDS } from './rules.js';

/** Per rule: texts that must be redacted (the secret, then the text around it), and texts that must not. */
const CASES: Record<string, { hit: [string, string][]; miss: string[]; notThisKind?: string[] }> = {
  'anthropic-api-key': {
    hit: [
      ['sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789_-ABCDEFGH', 'ANTHROPIC_API_KEY=%s'],
      ['sk-ant-admin01-Zx9y8W7v6U5t4S3r2Q1p0o', '"%s"'],
    ],
    miss: ['ANTHROPIC_API_KEY=sk-ant-test', 'the prefix sk-ant- is documented', 'task-ant-xyzxyzxyzxyzxyzxyzxyzxyz'],
  },
  'openai-api-key': {
    hit: [
      ['sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z', 'key: %s'],
      ['sk-0123456789abcdefABCDT3BlbkFJ0123456789abcdefABCD', '%s'],
      ['sk-abcdefghijklmnopqrstuvwxyz012345', "api_key='%s'"],
    ],
    miss: ['sk-short', 'risk-abcdefghijklmnopqrstuvwxyz0123456789', 'disk-0123456789abcdefghijklmnopqrstuv'],
  },
  'google-api-key': {
    hit: [['AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q', '?key=%s&x=1']],
    miss: ['AIzaShort', 'AIza is the prefix of Google keys'],
  },
  'aws-access-key-id': {
    hit: [
      ['AKIAIOSFODNN7EXAMPLE', 'aws_access_key_id=%s'],
      ['ASIAY34FZKBOKMUTVV7A', '"AccessKeyId": "%s"'],
    ],
    miss: ['AKIA', 'AKIAIOSFODNN7EXAMPLEX1', 'XAKIAIOSFODNN7EXAMPLE'],
  },
  'aws-secret-access-key': {
    hit: [
      ['wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', 'aws_secret_access_key = %s'],
      ['wJalrXUtnFEMI/K7MDENG/bPxRfiCYzz8AMPLEKE', '"SecretAccessKey": "%s"'],
    ],
    miss: [
      'aws_secret_access_key = ${AWS_SECRET_ACCESS_KEY}',
      'a 40-char hash e3b0c44298fc1c149afbf4c8996fb92427ae41e4 in git log',
    ],
  },
  'github-token': {
    hit: [
      ['ghp_0123456789abcdefghijABCDEFGHIJ012345', 'token %s'],
      ['ghp_0123456789abcdefghijABCDEFGHIJ012345', '"first\\n%s"'],
      ['github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456', '%s'],
      ['ghs_0123456789abcdefghijABCDEFGHIJ012345', '%s'],
    ],
    miss: ['ghp_short', 'gh_0123456789abcdefghijABCDEFGHIJ012345'],
  },
  'slack-token': {
    hit: [
      ['xoxb-1234567890-1234567890-AbCdEfGhIjKlMnOpQrStUvWx', 'SLACK=%s'],
      ['xoxp-0123456789-abcdefghij', '%s'],
    ],
    miss: ['xoxb-', 'xoxz-1234567890-1234567890'],
  },
  'slack-webhook': {
    hit: [['https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX', 'url=%s']],
    miss: ['https://hooks.slack.com/'],
  },
  'stripe-key': {
    hit: [
      ['sk_live_0123456789abcdefABCDEFGH', '%s'],
      ['rk_live_0123456789abcdefABCDEFGH', '%s'],
      ['sk_test_0123456789abcdefABCDEFGH', '%s'],
    ],
    miss: ['pk_live_0123456789abcdefABCDEFGH', 'sk_live_short'],
  },
  jwt: {
    hit: [
      [
        'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
        'Authorization: %s',
      ],
    ],
    miss: ['eyJhbGciOiJIUzI1NiJ9 alone', 'eyJ.eyJ.x'],
  },
  'url-password': {
    hit: [
      ['s3cr3tP4ss', 'postgres://app:%s@db:5432/x'],
      ['hunter2!', 'https://bob:%s@example.com/repo.git'],
    ],
    miss: [
      'postgres://app:${DB_PASSWORD}@db/x',
      'https://example.com/a:b@c',
      'git@github.com:acme/app.git',
      'http://user:@host/',
      'example: "http://user:pass@proxy:8080"',
    ],
  },
  'bearer-token': {
    hit: [['Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZg', 'Authorization: Bearer %s']],
    miss: ['Bearer token authentication is described in RFC 6750', 'Authorization: Bearer $TOKEN'],
  },
  'generic-secret': {
    hit: [
      ['Xk9#pL2vQ8zR4mN7', 'password=%s'],
      ['a8F3kL0pQz7Xw2Vb', '"client_secret": "%s"'],
      ['9fK2LmQ8xZ3vB7nR', 'DB_PASSWORD: %s'],
      ['q7W3eR9tY1uI5oP2', '\\"api_key\\": \\"%s\\"'],
      ['Xk9#pL2vQ8zR4mN7', 'line one\\npassword=%s\\nline three'],
    ],
    miss: [
      'password=${PASSWORD}',
      'password: changeme',
      'token_count=12345678',
      'secret = get_secret_from_vault',
      'max_tokens: 64000',
      'password_field=password_input',
      'apiKey: process.env.API_KEY',
      'password = "<your password>"',
      'const apiKey = options?.apiKey',
      'token = Base64.url_encode64(x)',
    ],
  },
  'private-key': {
    hit: [
      [
        '-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF0qJ\nabc+/=\n-----END RSA PRIVATE KEY-----',
        'key:\n%s\ndone',
      ],
      ['-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n-----END PRIVATE KEY-----', '{"k": "%s"}'],
      ['-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ', '%s'],
    ],
    miss: [
      '-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----',
      '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----',
    ],
  },
  'basic-auth': {
    hit: [
      ['dXNlcjpodW50ZXIyIXNlY3JldA==', 'Authorization: Basic %s'],
      ['hunter2!secret', 'curl -u admin:%s https://example.com'],
    ],
    miss: ['Basic auth is described in RFC 7617', 'Authorization: Basic YWJjZGVmZ2hpams=', 'curl -u admin:$PASS x'],
  },
};

/** Where each issuer's sample is planted (default: alone in a sentence). */
const ISSUER_CONTEXT: Record<string, string> = {
  'azure-storage-key': 'DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=%s;EndpointSuffix=core.windows.net',
};

// Every issuer rule: two fake keys of its format in context, and its near misses (cut short, prefix changed).
for (const seed of [1, 2]) {
  for (const { kind, secret, nearMiss } of issuerSamples(seed)) {
    const c = (CASES[kind] ??= { hit: [], miss: [] });
    c.hit.push([secret, ISSUER_CONTEXT[kind] ?? (seed === 1 ? 'the key is %s, keep it safe' : '{"key":"%s"}')]);
    // Not this issuer's key (another rule, such as the generic one, may still take it).
    (c.notThisKind ??= []).push(`a near miss: ${nearMiss} .`);
  }
}

describe('secret rules', () => {
  it('every built-in kind has cases', () => {
    expect(Object.keys(CASES).sort()).toEqual([...SECRET_KINDS].sort());
  });

  for (const kind of SECRET_KINDS) {
    it(`${kind}: redacts what it should, exactly, and nothing else`, () => {
      for (const [secret, around] of CASES[kind]!.hit) {
        const text = around.replace('%s', secret);
        const found = findSecrets(text);
        expect(
          found.map((f) => f.kind),
          text,
        ).toEqual([kind]);
        expect(redactSecrets(text)).toBe(around.replace('%s', `[REDACTED:${kind}]`));
      }
      for (const text of CASES[kind]!.miss) expect(findSecrets(text), text).toEqual([]);
      for (const text of CASES[kind]!.notThisKind ?? [])
        expect(
          findSecrets(text).filter((f) => f.kind === kind),
          text,
        ).toEqual([]);
    });
  }

  it('planted fake secrets of every kind are all found, named by kind, and gone after redaction', () => {
    for (const seed of [1, 2, 3, 42]) {
      for (const s of fakeSecrets(seed)) {
        const out = redactSecrets(s.inContext);
        expect(out, s.inContext).not.toContain(s.probe);
        expect(out).toContain(`[REDACTED:${s.kind}]`);
      }
    }
  });

  it('is idempotent and keeps JSON valid when applied to serialized JSON', () => {
    const doc = { messages: fakeSecrets(7).map((s) => ({ role: 'user', content: s.inContext })) };
    const once = redactSecrets(JSON.stringify(doc));
    expect(redactSecrets(once)).toBe(once);
    const parsed = JSON.parse(once) as typeof doc;
    expect(parsed.messages.length).toBe(doc.messages.length);
    for (const s of fakeSecrets(7)) expect(once).not.toContain(s.probe);
  });

  it('never changes text without secrets (property)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (s) => {
        // Arbitrary short strings are rarely secret-shaped; whatever is found is replaced, the rest untouched.
        const found = findSecrets(s);
        if (found.length === 0) expect(redactSecrets(s)).toBe(s);
      }),
    );
  });

  it('redacts messages part by part: text, thinking, tool-call arguments, tool results; signatures and media stay', () => {
    const [key] = fakeSecrets(3);
    const m = redactMessage(
      {
        role: 'assistant',
        parts: [
          { type: 'thinking', text: `use ${key!.secret}`, signature: 'sig-unchanged' },
          { type: 'text', text: `key ${key!.secret}` },
          {
            type: 'tool-call',
            id: 't1',
            name: 'bash',
            arguments: { command: `curl -H "x-api-key: ${key!.secret}"`, n: 3 },
          },
        ],
      },
      createRedactor(),
    );
    expect(JSON.stringify(m)).not.toContain(key!.probe);
    expect(m.parts[0]).toMatchObject({ signature: 'sig-unchanged' });
    expect((m.parts[2] as { arguments: { n: number } }).arguments.n).toBe(3);
    const same = { role: 'user' as const, parts: [{ type: 'text' as const, text: 'nothing here' }] };
    expect(redactMessage(same, createRedactor())).toBe(same);
    expect(redactValue({ a: ['x'] }, createRedactor())).toEqual({ a: ['x'] });
  });

  it('is configurable: off, rules disabled, patterns added; bad settings are named', () => {
    const text = 'ghp_0123456789abcdefghijABCDEFGHIJ012345 and INTERNAL-ABC-123456';
    expect(createRedactor({ enabled: false })(text)).toBe(text);
    expect(createRedactor({ disable: ['github-token'] })(text)).toBe(text);
    expect(createRedactor({ patterns: [{ id: 'internal-id', pattern: 'INTERNAL-[A-Z]+-\\d+' }] })(text)).toBe(
      '[REDACTED:github-token] and [REDACTED:internal-id]',
    );
    expect(() => createRedactor({ disable: ['nope'] })).toThrow(/redaction.disable: unknown kind "nope"/);
    expect(() => createRedactor({ patterns: [{ id: 'x', pattern: '(' }] })).toThrow(/redaction.patterns\[0\].pattern/);
  });
});
