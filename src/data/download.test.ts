import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { downloadData, gitBlobSha1 } from './download.js';
import type { ManifestEntry } from './manifest.js';

const BODY = Buffer.from(
  `${JSON.stringify({ pairID: 'p1', context: 'Контекст', question: 'Вопрос?', answer: 'да' })}\n`,
);
const entry = (path: string, body = BODY): ManifestEntry => ({
  path,
  size: body.length,
  sha256: createHash('sha256').update(body).digest('hex'),
});

type Behaviour = 'ok' | 'truncate' | 'drop' | 'wrong' | '500' | '404' | 'redirect' | 'huge';

/** A loopback file server whose answer to each path follows a script, one behaviour per request. */
let server: Server;
let baseUrl: string;
const scripts = new Map<string, Behaviour[]>();
const hits = new Map<string, number>();

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = (req.url ?? '').replace(/^\/data\//, '');
    const n = hits.get(path) ?? 0;
    hits.set(path, n + 1);
    const script = scripts.get(path) ?? ['404'];
    const behaviour = script[Math.min(n, script.length - 1)];
    switch (behaviour) {
      case 'ok':
        res.writeHead(200, { 'content-length': BODY.length }).end(BODY);
        return;
      case 'truncate':
        // Promise the whole body, send half, then hang up.
        res.writeHead(200, { 'content-length': BODY.length });
        res.write(BODY.subarray(0, BODY.length >> 1), () => res.socket?.destroy());
        return;
      case 'drop':
        req.socket.destroy();
        return;
      case 'wrong': {
        const other = Buffer.from(BODY.toString().replace('да', 'не'));
        res.writeHead(200, { 'content-length': other.length }).end(other);
        return;
      }
      case '500':
        res.writeHead(500).end('boom');
        return;
      case 'redirect':
        res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
        return;
      case 'huge': {
        // Far more than the manifest's size, sent without a length: the reading must stop past the size.
        const chunk = Buffer.alloc(1 << 16, 0x61);
        let sent = 0;
        const more = () => {
          while (sent < 64 << 20) {
            sent += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', more);
          }
          res.end();
        };
        res.writeHead(200);
        more();
        return;
      }
      default:
        res.writeHead(404).end('not found');
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/data`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const run = (dir: string, manifest: ManifestEntry[]) =>
  downloadData({ dir, baseUrl, manifest, attempts: 3, backoffMs: 1, timeoutMs: 5000 });
const tmp = () => mkdtempSync(join(tmpdir(), 'rumedbench-dl-'));

describe('downloadData against a local server', () => {
  it('downloads and verifies a good file, then keeps it on the next run without a request', async () => {
    scripts.set('Good/test_v1.jsonl', ['ok']);
    const dir = tmp();
    const manifest = [entry('Good/test_v1.jsonl')];
    expect(await run(dir, manifest)).toEqual([
      {
        path: 'Good/test_v1.jsonl',
        status: 'downloaded',
        verified: true,
        check: 'sha256',
        bytes: BODY.length,
      },
    ]);
    expect(readFileSync(join(dir, 'Good/test_v1.jsonl'))).toEqual(BODY);
    expect(await run(dir, manifest)).toEqual([
      { path: 'Good/test_v1.jsonl', status: 'present', verified: true, check: 'sha256' },
    ]);
    expect(hits.get('Good/test_v1.jsonl')).toBe(1);
  });

  it('fetches a corrupt local file again', async () => {
    scripts.set('Corrupt/test_v1.jsonl', ['ok']);
    const dir = tmp();
    mkdirSync(join(dir, 'Corrupt'));
    writeFileSync(join(dir, 'Corrupt/test_v1.jsonl'), BODY.subarray(0, 10));
    const [r] = await run(dir, [entry('Corrupt/test_v1.jsonl')]);
    expect(r?.status).toBe('downloaded');
    expect(readFileSync(join(dir, 'Corrupt/test_v1.jsonl'))).toEqual(BODY);
  });

  it('retries a truncated body, a dropped connection and a 500, and succeeds', async () => {
    scripts.set('Flaky/test_v1.jsonl', ['truncate', 'drop', 'ok']);
    scripts.set('Busy/test_v1.jsonl', ['500', 'ok']);
    const dir = tmp();
    const reports = await run(dir, [entry('Flaky/test_v1.jsonl'), entry('Busy/test_v1.jsonl')]);
    expect(reports.map((r) => r.status)).toEqual(['downloaded', 'downloaded']);
    expect(hits.get('Flaky/test_v1.jsonl')).toBe(3);
    expect(hits.get('Busy/test_v1.jsonl')).toBe(2);
    expect(readFileSync(join(dir, 'Flaky/test_v1.jsonl'))).toEqual(BODY);
  });

  it('fails on a wrong checksum and leaves no file behind', async () => {
    scripts.set('Wrong/test_v1.jsonl', ['wrong']);
    const dir = tmp();
    const [r] = await run(dir, [entry('Wrong/test_v1.jsonl')]);
    expect(r?.status).toBe('failed');
    expect(r?.error).toMatch(/sha256 mismatch: expected [0-9a-f]{64}, found [0-9a-f]{64}/);
    expect(readdirSync(join(dir, 'Wrong'))).toEqual([]);
  });

  it('gives up on a 404 at once, and on a connection that keeps dropping after the last attempt', async () => {
    scripts.set('Dead/test_v1.jsonl', ['drop']);
    const dir = tmp();
    const reports = await run(dir, [entry('Missing/test_v1.jsonl'), entry('Dead/test_v1.jsonl')]);
    expect(reports.map((r) => [r.status, r.error?.replace(baseUrl, 'URL')])).toEqual([
      ['failed', 'URL/Missing/test_v1.jsonl: HTTP 404 (not found)'],
      ['failed', expect.stringMatching(/^URL\/Dead\/test_v1.jsonl: request failed/)],
    ]);
    expect(hits.get('Missing/test_v1.jsonl')).toBe(1);
    expect(hits.get('Dead/test_v1.jsonl')).toBe(3);
    expect(existsSync(join(dir, 'Missing/test_v1.jsonl'))).toBe(false);
  });

  it('follows no redirect (the address named, no second request), and stops reading a file past its size', async () => {
    scripts.set('Moved/test_v1.jsonl', ['redirect']);
    scripts.set('Huge/test_v1.jsonl', ['huge']);
    const dir = tmp();
    const reports = await run(dir, [entry('Moved/test_v1.jsonl'), entry('Huge/test_v1.jsonl')]);
    expect(reports.map((r) => [r.status, r.error?.replace(baseUrl, 'URL')])).toEqual([
      [
        'failed',
        'URL/Moved/test_v1.jsonl: HTTP 302, a redirect to http://169.254.169.254/latest/meta-data/; redirects are not followed: give the final address (RUMEDBENCH_DATA_URL)',
      ],
      ['failed', `URL/Huge/test_v1.jsonl: size mismatch: expected ${BODY.length}, found more`],
    ]);
    expect(hits.get('Moved/test_v1.jsonl')).toBe(1);
    expect(readdirSync(join(dir, 'Huge'))).toEqual([]);
  });

  it("computes git's blob id as git does", async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'hello'), 'hello\n');
    // `printf 'hello\n' | git hash-object --stdin`
    expect(await gitBlobSha1(join(dir, 'hello'))).toBe('ce013625030ba8dba906f756967f9e9ca394464a');
  });

  it("checks a file with no sha256 against git's blob id at the pinned commit", async () => {
    const blob = createHash('sha1').update(`blob ${BODY.length}\0`).update(BODY).digest('hex');
    const nli = { path: 'Blob/train_v1.jsonl', size: null, sha256: null, gitBlob: blob };
    scripts.set('Blob/train_v1.jsonl', ['ok']);
    const dir = tmp();
    expect(await run(dir, [nli])).toEqual([
      {
        path: 'Blob/train_v1.jsonl',
        status: 'downloaded',
        verified: true,
        check: 'git blob',
        bytes: BODY.length,
      },
    ]);
    // Present and intact: kept.
    expect((await run(dir, [nli]))[0]?.status).toBe('present');
    scripts.set('BadBlob/train_v1.jsonl', ['wrong']);
    const [bad] = await run(tmp(), [{ ...nli, path: 'BadBlob/train_v1.jsonl' }]);
    expect([bad?.status, bad?.error]).toEqual([
      'failed',
      expect.stringMatching(
        new RegExp(`BadBlob/train_v1\\.jsonl: git blob sha1 mismatch: expected ${blob}, found [0-9a-f]{40}$`),
      ),
    ]);
  });

  it('downloads a file with no known checksum and reports it unverified', async () => {
    scripts.set('Unknown/train_v1.jsonl', ['ok']);
    const [r] = await run(tmp(), [{ path: 'Unknown/train_v1.jsonl', size: null, sha256: null }]);
    expect(r).toEqual({
      path: 'Unknown/train_v1.jsonl',
      status: 'downloaded',
      verified: false,
      bytes: BODY.length,
    });
  });
});
