/** Bodies read under a cap, whatever their Content-Length says (a chunked body has none). */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rememberSecret } from '../log.js';
import { readCapped, saveCapped } from './read-capped.js';

const chunked = (parts: string[]) => {
  let pulled = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      const p = parts[pulled++];
      if (p === undefined) c.close();
      else c.enqueue(new TextEncoder().encode(p));
    },
  });
  return { res: new Response(stream), pulled: () => pulled };
};

describe('readCapped', () => {
  it('reads a body within the cap, and stops at the first chunk past it', async () => {
    expect(await readCapped(chunked(['Ответ: ', 'да']).res, 100)).toBe('Ответ: да');
    const big = chunked(['x'.repeat(60), 'x'.repeat(60), 'x'.repeat(60), 'x'.repeat(60)]);
    expect(await readCapped(big.res, 100)).toBeNull();
    expect(big.pulled()).toBeLessThanOrEqual(3);
  });
});

describe('saveCapped', () => {
  it('writes a body within the cap to a file, and empties the file at the first chunk past it', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'rumedbench-save-')), 'body');
    expect(await saveCapped(chunked(['{"a":1}\n', '{"b":2}\n']).res, 100, file)).toBe(true);
    expect(readFileSync(file, 'utf8')).toBe('{"a":1}\n{"b":2}\n');
    const big = chunked(['x'.repeat(60), 'x'.repeat(60), 'x'.repeat(60), 'x'.repeat(60)]);
    expect(await saveCapped(big.res, 100, file)).toBe(false);
    expect(big.pulled()).toBeLessThanOrEqual(3);
    expect(readFileSync(file, 'utf8')).toBe('');
  });

  it('writes no registered secret, even one split across chunks (a killed run leaves no key behind)', async () => {
    rememberSecret('sk-test-SECRET-4711');
    const file = join(mkdtempSync(join(tmpdir(), 'rumedbench-save-')), 'body');
    const parts = [
      '{"error":"Incorrect API key provided: sk-te',
      'st-SECRET-',
      '4711","ok":"Ответ"}\n',
      '"sk-test-SECRET-4711"',
    ];
    expect(await saveCapped(chunked(parts).res, 1000, file)).toBe(true);
    expect(readFileSync(file, 'utf8')).toBe(
      '{"error":"Incorrect API key provided: ***","ok":"Ответ"}\n"***"',
    );
  });
});
