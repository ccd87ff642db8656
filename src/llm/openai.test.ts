import { describe, expect, it } from 'vitest';
import { retryAfterMs } from './openai.js';

describe('Retry-After', () => {
  it('reads seconds and HTTP dates, and ignores what it cannot read', () => {
    const now = Date.parse('2026-11-30T04:00:00Z');
    expect(retryAfterMs('2', now)).toBe(2000);
    expect(retryAfterMs('0.5', now)).toBe(500);
    expect(retryAfterMs('Mon, 30 Nov 2026 04:00:03 GMT', now)).toBe(3000);
    expect(retryAfterMs('Mon, 30 Nov 2026 03:59:00 GMT', now)).toBe(0);
    expect(retryAfterMs('soon', now)).toBeUndefined();
    expect(retryAfterMs(null, now)).toBeUndefined();
  });
});
