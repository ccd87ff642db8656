import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type Answer, backoffMs, retryAfterMs, type SendOptions, send, TransportError } from './transport.js';

describe('Retry-After', () => {
  it('reads seconds and HTTP dates; no usable wait (absent, unreadable, ≤ 0, past) is undefined, never "at once"', () => {
    const now = Date.parse('2026-11-30T04:00:00Z');
    expect(retryAfterMs('2', now)).toBe(2000);
    expect(retryAfterMs('0.5', now)).toBe(500);
    expect(retryAfterMs('Mon, 30 Nov 2026 04:00:03 GMT', now)).toBe(3000);
    expect(retryAfterMs('Mon, 30 Nov 2026 03:59:00 GMT', now)).toBeUndefined();
    expect(retryAfterMs('0', now)).toBeUndefined();
    expect(retryAfterMs('-5', now)).toBeUndefined();
    expect(retryAfterMs('soon', now)).toBeUndefined();
    expect(retryAfterMs(null, now)).toBeUndefined();
  });

  it('backs off exponentially with equal jitter, capped', () => {
    expect([0, 1, 2, 3].map((a) => backoffMs(a, {}, () => 0))).toEqual([250, 500, 1000, 2000]);
    expect([0, 1, 2, 3].map((a) => backoffMs(a, {}, () => 1))).toEqual([500, 1000, 2000, 4000]);
    expect(backoffMs(20, { capMs: 30_000 }, () => 1)).toBe(30_000);
  });
});

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});
async function serve(
  answer: (n: number) => { status: number; headers?: Record<string, string>; body?: string },
) {
  const times: number[] = [];
  const server = createServer((req, res) => {
    times.push(performance.now());
    req.resume();
    const a = answer(times.length - 1);
    res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers }).end(a.body ?? '{}');
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, times };
}
const gaps = (t: number[]) => t.slice(1).map((x, i) => x - (t[i] as number));

describe('send (a loopback server)', () => {
  it.each([503, 429])(
    'waits longer and longer on %i without Retry-After, the first wait ≥ 0.25 s',
    async (status) => {
      const s = await serve((n) => (n < 3 ? { status } : { status: 200, body: '{"ok":true}' }));
      const a = await send(s.url, () => ({ method: 'POST', body: '{}' }), {
        maxBytes: 1024,
        retry: { retries: 5 },
      });
      expect([a.status, a.text]).toEqual([200, '{"ok":true}']);
      const g = gaps(s.times);
      expect(g).toHaveLength(3);
      expect(g[0]).toBeGreaterThanOrEqual(245);
      expect(g[1]).toBeGreaterThanOrEqual(495);
      expect(g[2]).toBeGreaterThanOrEqual(995);
    },
  );

  it('honours Retry-After, returns the answer when it asks for too long, and gives up after its retries', async () => {
    const s = await serve((n) =>
      n === 0 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 },
    );
    await send(s.url, () => ({}), { maxBytes: 1024, retry: { retries: 2 } });
    expect(gaps(s.times)[0]).toBeGreaterThanOrEqual(990);

    const long = await serve(() => ({ status: 503, headers: { 'retry-after': '3600' }, body: '{"e":1}' }));
    const a = await send(long.url, () => ({}), { maxBytes: 1024, retry: { retries: 3, maxWaitMs: 60_000 } });
    expect([a.status, long.times.length]).toEqual([503, 1]);

    const busy = await serve(() => ({ status: 503 }));
    const b = await send(busy.url, () => ({}), { maxBytes: 1024, retry: { retries: 2, baseMs: 20 } });
    expect([b.status, busy.times.length]).toEqual([503, 3]);
  });

  it('caps the answer and names a server that is not there', async () => {
    const big = await serve(() => ({ status: 200, body: 'x'.repeat(5000) }));
    expect((await send(big.url, () => ({}), { maxBytes: 1000, retry: { retries: 0 } })).text).toBeNull();
    const gone = await serve(() => ({ status: 200 }));
    const url = gone.url;
    await new Promise((r) => servers.pop()?.close(r));
    const e = await send(url, () => ({}), { maxBytes: 10, retry: { retries: 1, baseMs: 10 } }).catch(
      (x) => x,
    );
    expect(e).toBeInstanceOf(TransportError);
    expect([(e as TransportError).attempts, (e as Error).message]).toEqual([
      2,
      expect.stringContaining('ECONNREFUSED'),
    ]);
  });
});

describe('send: a JSON request (undici request) and a form (fetch) on the wire', () => {
  /** What the server saw: method, path with its query, the headers sent, the body. */
  async function echo(reply: (res: import('node:http').ServerResponse) => void) {
    const seen: { method?: string; url?: string; type?: string; auth?: string; body: string }[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => {
        body += d;
      });
      req.on('end', () => {
        seen.push({
          ...(req.method ? { method: req.method } : {}),
          ...(req.url ? { url: req.url } : {}),
          ...(req.headers['content-type'] ? { type: req.headers['content-type'] } : {}),
          ...(req.headers.authorization ? { auth: req.headers.authorization } : {}),
          body,
        });
        reply(res);
      });
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
  }

  it('sends the method, path, query, headers and UTF-8 body as given; answers status, every header, the text', async () => {
    const s = await echo((res) => {
      res.setHeader('set-cookie', ['a=1', 'b=2']);
      res.writeHead(201, { 'x-one': 'v' }).end('{"ответ":"да"}');
    });
    const a = await send(
      `${s.url}/v1/chat?x=1&y=%D0%B0`,
      () => ({
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer k' },
        body: '{"вопрос":"нет"}',
      }),
      { maxBytes: 1024, retry: { retries: 0 } },
    );
    expect(s.seen).toEqual([
      {
        method: 'POST',
        url: '/v1/chat?x=1&y=%D0%B0',
        type: 'application/json',
        auth: 'Bearer k',
        body: '{"вопрос":"нет"}',
      },
    ]);
    expect([a.status, a.text, a.headers.get('x-one'), a.headers.getSetCookie()]).toEqual([
      201,
      '{"ответ":"да"}',
      'v',
      ['a=1', 'b=2'],
    ]);
    // A GET without a body, and a form (through fetch), reach the same server alike.
    await send(`${s.url}/models`, () => ({}), { maxBytes: 1024, retry: { retries: 0 } });
    const form = new FormData();
    form.append('name', 'x');
    await send(`${s.url}/up`, () => ({ method: 'POST', body: form }), {
      maxBytes: 1024,
      retry: { retries: 0 },
    });
    expect(
      s.seen.slice(1).map((x) => [x.method, x.url, x.type?.split(';')[0], x.body.includes('name="name"')]),
    ).toEqual([
      ['GET', '/models', undefined, false],
      ['POST', '/up', 'multipart/form-data', true],
    ]);
  });

  it('follows no redirect, and gives up on an answer that stalls mid-body at the timeout (read phase)', async () => {
    const moved = await echo((res) => res.writeHead(302, { location: '/elsewhere' }).end('moved'));
    const r = await send(`${moved.url}/a`, () => ({ method: 'POST', body: '{}' }), {
      maxBytes: 1024,
      retry: { retries: 0 },
    });
    expect([r.status, r.headers.get('location'), moved.seen.map((x) => x.url)]).toEqual([
      302,
      '/elsewhere',
      ['/a'],
    ]);
    const stall = await echo((res) => {
      res.writeHead(200);
      res.write('{"half":');
    });
    const e = await send(`${stall.url}/b`, () => ({ method: 'POST', body: '{}' }), {
      maxBytes: 1024,
      timeoutMs: 300,
      retry: { retries: 0 },
    }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(TransportError);
    expect([(e as TransportError).phase, (e as TransportError).status, (e as Error).message]).toEqual([
      'read',
      200,
      'the answer broke off (timed out)',
    ]);
  });
});

describe('send: a text request through the dispatcher (#64: no stream, signal or Headers per request)', () => {
  const listen = (s: Server, path: string) =>
    new Promise<string>((r) =>
      s.listen(0, '127.0.0.1', () => r(`http://127.0.0.1:${(s.address() as AddressInfo).port}${path}`)),
    );
  /** A JSON POST, one attempt: its answer, or what it threw. */
  const post = (url: string, o: Partial<SendOptions> = {}) =>
    send(url, () => ({ method: 'POST', body: '{}' }), { maxBytes: 1024, retry: { retries: 0 }, ...o }).catch(
      (x: unknown) => x,
    );

  it('times out before any answer (connect phase), and lets a long answer go at the cap across its chunks', async () => {
    const silent = createServer((req) => req.resume());
    const chunky = createServer((req, res) => {
      req.resume();
      res.writeHead(200);
      res.write('a'.repeat(600));
      setTimeout(() => res.write('b'.repeat(600)), 20);
      setTimeout(() => res.end('c'.repeat(600)), 40);
    });
    servers.push(silent, chunky);
    const urls = await Promise.all([silent, chunky].map((s) => listen(s, '/x')));
    const started = performance.now();
    const e = await post(urls[0] as string, { timeoutMs: 250 });
    expect(e).toBeInstanceOf(TransportError);
    expect([(e as TransportError).phase, (e as TransportError).attempts, (e as Error).message]).toEqual([
      'connect',
      1,
      'timed out',
    ]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(240);
    // 1,800 bytes in three chunks against a cap of 1,000: cut off (null), whatever the chunks; 1,800 pass.
    const capped = (await post(urls[1] as string, { maxBytes: 1000 })) as Answer;
    expect([capped.status, capped.text]).toEqual([200, null]);
    const whole = (await post(urls[1] as string, { maxBytes: 1800 })) as Answer;
    expect(whole.text).toBe(`${'a'.repeat(600)}${'b'.repeat(600)}${'c'.repeat(600)}`);
  });

  it('heeds a proxy setting changed between two requests to one URL (dispatchers are kept per setting)', async () => {
    // Two proxies that take the tunnel's CONNECT and refuse it: each says which target it was asked for.
    const proxies = [0, 1].map(() => {
      const seen: string[] = [];
      const s = createServer();
      s.on('connect', (req, socket) => {
        seen.push(req.url ?? '');
        socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
      });
      servers.push(s);
      return { s, seen };
    });
    const addresses = await Promise.all(proxies.map(({ s }) => listen(s, '')));
    const saved = { lower: process.env.http_proxy, upper: process.env.HTTP_PROXY };
    try {
      for (const address of addresses) {
        process.env.http_proxy = address;
        process.env.HTTP_PROXY = address;
        expect(await post('http://model.example/v1/chat')).toBeInstanceOf(TransportError);
      }
    } finally {
      for (const [name, value] of [
        ['http_proxy', saved.lower],
        ['HTTP_PROXY', saved.upper],
      ] as const)
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
    }
    expect(proxies.map((p) => p.seen)).toEqual([['model.example:80'], ['model.example:80']]);
  });
});
