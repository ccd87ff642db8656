import { describe, expect, it } from 'vitest';
import { createLogger, redactCredentials, redactSecrets, redactUrl, rememberSecret } from './log.js';

describe('credentials never reach a log', () => {
  it('redacts a password in the userinfo or the query, in any text', () => {
    expect(redactUrl('postgres://u:s3cret@db:5432/x?password=hunter2&sslmode=require')).toBe(
      'postgres://u:***@db:5432/x?password=***&sslmode=require',
    );
    expect(
      redactCredentials(
        'cannot reach postgres://ops:pa55@10.0.0.5/db; model at http://h/v1?api-key=sk-1&x=1',
      ),
    ).toBe('cannot reach postgres://ops:***@10.0.0.5/db; model at http://h/v1?api-key=***&x=1');
  });

  it('passes every line through the redaction', () => {
    const lines: string[] = [];
    createLogger('info', (l) => lines.push(l)).error(
      'queue at postgres://w:topsecret@db/q?password=topsecret2',
    );
    expect(lines).toEqual(['error: queue at postgres://w:***@db/q?password=***\n']);
  });
});

describe('a remembered secret in base64 (red team, issue #59)', () => {
  const key = 'sk-b64/te+st=Kq9&y"z-0123456789';
  rememberSecret(key);
  const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
  const b64url = (s: string) => Buffer.from(s, 'utf8').toString('base64url');
  /** Whether any run of 8 characters of the secret's base64 (at any alignment) is left in `text`. */
  const leaks = (text: string) =>
    ['', 'x', 'xy'].some((pad) => {
      const whole = b64(pad + key).slice(4);
      for (let i = 0; i + 8 <= whole.length - 4; i++) if (text.includes(whole.slice(i, i + 8))) return true;
      return false;
    });

  it('is redacted at every alignment, in Basic auth, in base64url and with a JSON-escaped slash', () => {
    const forms = [
      `Authorization: Basic ${b64(`x:${key}`)}`,
      `Basic ${b64(`user:${key}`)}`,
      b64(key),
      b64(`{"key":"${key}"}`),
      b64url(`ab${key}cd`),
      JSON.stringify({ echoed: b64(`${key}!`) }).replace(/\//g, '\\/'),
    ];
    for (const form of forms) {
      expect(leaks(form), form).toBe(true);
      const redacted = redactSecrets(form);
      expect(redacted, form).toContain('***');
      expect(leaks(redacted), redacted).toBe(false);
    }
  });

  it('leaves base64 that does not hold it alone', () => {
    const other = b64('sk-another-key-of-the-same-length-0123');
    expect(redactSecrets(`Basic ${other}`)).toBe(`Basic ${other}`);
  });
});
