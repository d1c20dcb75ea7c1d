import { describe, expect, it } from 'vitest';
import { GENERIC_FORMS, GENERIC_LOOKALIKES } from '../../test/support/secrets.js';
import { findSecrets, redactSecrets } from './redact.js';

/**
 * The generic rule (a value assigned to a name that says it is a secret), form by form: 40 ways code, env files, JSON,
 * YAML and command lines assign a secret, each redacted exactly (the value, nothing around it); and the look-alikes —
 * types, placeholders, expansions, code, counts — left alone.
 */

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
