/** Bodies read under a cap, whatever their Content-Length says (a chunked body has none). */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rememberSecret } from '../log.js';
import { readCapped, SavedBody, saveCapped } from './read-capped.js';

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

describe('SavedBody', () => {
  /** A body that sends `parts`, then breaks off (as a connection closed half-way does). */
  const breaking = (parts: string[], headers: Record<string, string>, status = 200) => {
    let pulled = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        const p = parts[pulled++];
        if (p === undefined) c.error(new TypeError('terminated'));
        else c.enqueue(new TextEncoder().encode(p));
      },
    });
    return new Response(stream, { status, headers });
  };
  const whole = '{"a":"sk-test-RANGE-0815"}\n{"b":"Ответ"}\n';
  const first = {
    'accept-ranges': 'bytes',
    etag: '"v1"',
    'content-length': String(Buffer.byteLength(whole)),
  };

  it('continues a body that broke off in the middle of a key from that byte, writing no part of the key', async () => {
    rememberSecret('sk-test-RANGE-0815');
    const file = join(mkdtempSync(join(tmpdir(), 'rumedbench-saved-')), 'body');
    const saved = new SavedBody(file);
    const res = breaking(['{"a":"sk-test-RA'], first);
    expect(saved.accept(200, res.headers, false)).toBe(true);
    await expect(saved.write(res, 1000)).rejects.toThrow('terminated');
    // Held back in memory: the bytes a key could begin with never reach the file.
    const kept = readFileSync(file, 'utf8');
    expect([kept.includes('sk-'), '{"a":"'.startsWith(kept)]).toEqual([false, true]);
    expect(saved.rangeHeaders()).toEqual({ range: 'bytes=16-', 'if-range': '"v1"' });
    const rest = Buffer.from(whole).subarray(16).toString('utf8');
    const part = breaking(
      [rest],
      { etag: '"v1"', 'content-range': `bytes 16-${first['content-length'] as string}/x` },
      206,
    );
    // A Content-Range whose length is not the first answer's is another file: not appended.
    expect(saved.accept(206, part.headers, true)).toBe(false);
    expect(saved.rangeHeaders()).toEqual({});
  });

  it('appends a 206 that starts at the byte reached, under the same ETag; the file is the unbroken body, redacted', async () => {
    rememberSecret('sk-test-RANGE-0815');
    const file = join(mkdtempSync(join(tmpdir(), 'rumedbench-saved-')), 'body');
    const saved = new SavedBody(file);
    const res = breaking(['{"a":"sk-test-RA'], first);
    saved.accept(200, res.headers, false);
    await saved.write(res, 1000).catch(() => undefined);
    const bytes = Buffer.from(whole);
    const rest = bytes.subarray(16);
    const ok = new Response(rest, {
      status: 206,
      headers: { etag: '"v1"', 'content-range': `bytes 16-${bytes.length - 1}/${bytes.length}` },
    });
    expect(saved.accept(206, ok.headers, true)).toBe(true);
    expect(await saved.write(ok, 1000)).toBe(true);
    expect(readFileSync(file, 'utf8')).toBe('{"a":"***"}\n{"b":"Ответ"}\n');
    expect([saved.resumes, saved.bytesKept]).toEqual([1, 16]);
    expect(saved.rangeHeaders()).toEqual({});
  });

  it('asks no range of an encoded body, nor of a server that offers none; a 206 under another ETag is refused', async () => {
    for (const headers of [{ ...first, 'content-encoding': 'gzip' }, { etag: '"v1"' }]) {
      const saved = new SavedBody(join(mkdtempSync(join(tmpdir(), 'rumedbench-saved-')), 'body'));
      const res = breaking(['{"a":1}'], headers);
      saved.accept(200, res.headers, false);
      await saved.write(res, 1000).catch(() => undefined);
      expect(saved.rangeHeaders()).toEqual({});
    }
    const saved = new SavedBody(join(mkdtempSync(join(tmpdir(), 'rumedbench-saved-')), 'body'));
    const res = breaking(['{"a":1}'], first);
    saved.accept(200, res.headers, false);
    await saved.write(res, 1000).catch(() => undefined);
    expect(saved.rangeHeaders()).toEqual({ range: 'bytes=7-', 'if-range': '"v1"' });
    const other = new Headers({
      etag: '"v2"',
      'content-range': `bytes 7-${Buffer.byteLength(whole) - 1}/${Buffer.byteLength(whole)}`,
    });
    expect(saved.accept(206, other, true)).toBe(false);
    expect(saved.rangeHeaders()).toEqual({});
  });
});
