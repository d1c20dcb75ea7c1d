import { describe, expect, it } from 'vitest';
import { findSecrets, redactSecrets } from './redact.js';

/**
 * The generic rule (a value assigned to a name that says it is a secret), form by form: 40 ways code, env files, JSON,
 * YAML and command lines assign a secret, each redacted exactly (the value, nothing around it); and the look-alikes —
 * types, placeholders, expansions, code, counts — left alone.
 */

const S = 'Zq8vK2mX9pL4tR7w';
const LONG = `${'Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z'.repeat(10)}Q`; // 321 characters

/** `%s` is where the secret is. */
export const GENERIC_FORMS: [string, string][] = [
  ['accessToken: "%s"', S],
  ['const accessToken = "%s";', S],
  ['SECRET_KEY=%s', S],
  ['PGPASSWORD=%s psql -h db -U app', S],
  ['pg_dump --password %s app', S],
  ['psql --password=%s', S],
  ['mysql -u root -p%s app', S],
  ['sshpass -p %s ssh deploy@host', S],
  ['{"api_key": "%s"}', S],
  ['api_key: %s', S],
  ['password: "%s"', S],
  ['DB_PASSWORD=%s', S],
  ['export AWS_SESSION_TOKEN=%s', S],
  ["client_secret = '%s'", S],
  ['self.api_key = "%s"', S],
  ['apiKey := "%s"', S],
  ["'password' => '%s',", S],
  ['private_key = "%s"', S],
  ["DJANGO_SECRET_KEY='%s'", S],
  ['SECRET_KEY_BASE=%s', S],
  ["password='%s'", '$ecr3tP4ss!x9'],
  ['password="%s"', '%Qz8fR2mK!w7'],
  ['password="%s"', '<Zq8v!K2mX9pL4tR7w'],
  ['password="%s"', '{Zq8vK2mX9pL4tR7w'],
  ['api_key="%s"', LONG],
  ['PASSWORD=%s', LONG],
  ['auth_token: %s', S],
  ['refresh_token = "%s"', S],
  ['GITHUB_TOKEN=%s', S],
  ['passphrase: %s', S],
  ['credentials = "%s"', S],
  ['export MYSQL_PWD=%s', S],
  ['docker run -e POSTGRES_PASSWORD=%s postgres', S],
  ['"secret": "%s"', S],
  ['encryption_key = "%s"', S],
  ['curl -H "x-api-key: %s" https://api.example.com', S],
  ["signingKey: '%s'", S],
  ['\\"password\\": \\"%s\\"', S],
  ['line one\\nTOKEN=%s\\nline three', S],
  ['--api-key %s', S],
];

/** Not secrets: types, placeholders, expansions, code, counts, paths, names. */
export const GENERIC_LOOKALIKES: string[] = [
  'password: string',
  'token: Optional[str] = None',
  'apiKey?: string;',
  'secret: SecretStr',
  'password = os.environ["DB_PASSWORD"]',
  'PASSWORD=${DB_PASSWORD}',
  'password=$(cat /run/secrets/db)',
  'token: "{{ .Values.token }}"',
  'api_key: "<your-api-key>"',
  'password: "changeme"',
  'SECRET_KEY=your-secret-key-here',
  "password: '********'",
  'token = await getToken()',
  'accessToken: accessToken,',
  'private_key: &PrivateKey',
  'psql --password $PGPASSWORD',
  'password="%s"',
  'password = %(password)s',
  'token: string | undefined',
  'max_tokens: 4096',
  'token_count=12345678',
  'pwd = os.getcwd()',
  'PWD=/home/user/project',
  'password_hash = bcrypt.hash(password)',
  'tokenizer = "o200k_base"',
  '--token-file ~/.config/token',
  'SECRET_KEY_FILE=/run/secrets/django_key',
  'secret_name = "prod-db-password"',
  'apiKey: process.env.OPENAI_API_KEY',
  'const token = req.headers.authorization',
  'password: Option<String>,',
  'token: &str,',
  'API_KEY=%API_KEY%',
  'mkdir -p /tmp/x && mysql -p app',
  'date -u +%Y-%m-%dT%H:%M:%SZ',
  'secret: ${{ secrets.DEPLOY_KEY }}',
  'pwd = `~${pwd.slice(home.length)}`',
  'password: [REDACTED:generic-secret]',
  'session_token_path=/var/run/3f2a9c1e-8b7d-4e21-9a0f-1c2d3e4f5a6b/token',
];

describe('the generic rule', () => {
  it.each(GENERIC_FORMS)('redacts %s (exactly the value)', (form, secret) => {
    const text = form.replace('%s', secret);
    const found = findSecrets(text);
    expect(
      found.map((f) => f.kind),
      text,
    ).toEqual(['generic-secret']);
    expect(redactSecrets(text)).toBe(form.replace('%s', '[REDACTED:generic-secret]'));
  });

  it.each(GENERIC_LOOKALIKES.map((t) => [t]))('leaves alone %s', (text) => {
    expect(findSecrets(text)).toEqual([]);
  });
});
