import { describe, expect, it } from 'vitest';
import { createLogger, redactCredentials, redactUrl } from './log.js';

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
