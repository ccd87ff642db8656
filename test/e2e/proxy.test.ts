/**
 * Behind a proxy, as a hospital is (issue #63 item 3): `data download` and `llm` reach servers that only a logging
 * proxy on loopback can reach (made-up names it maps to loopback servers), through HTTPS_PROXY/HTTP_PROXY or
 * `--proxy`; NO_PROXY sends a host past it; a proxy setting the program cannot use is refused before anything is sent.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MANIFEST } from '../../src/data/manifest.js';
import { rumedbenchWith } from '../helpers/cli.js';
import { loggingProxy } from '../helpers/connect-proxy.js';
import { DATA_DIR, NO_DATA_REASON } from '../helpers/data.js';
import { startFakeOpenAI } from '../helpers/fake-openai.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

/** No proxy of the machine running the tests leaks in: each test says its own. */
const NONE = { HTTPS_PROXY: '', https_proxy: '', HTTP_PROXY: '', http_proxy: '', NO_PROXY: '', no_proxy: '' };

/** A mirror of the data folder on loopback, serving `dir`'s files by their manifest path, counting requests. */
async function mirror(dir: string): Promise<{ port: number; gets: string[] }> {
  const gets: string[] = [];
  const server: Server = createServer((req, res) => {
    gets.push(req.url ?? '');
    const file = join(dir, (req.url ?? '').replace(/^\/data\//, ''));
    if (!existsSync(file)) res.writeHead(404).end();
    else res.writeHead(200).end(readFileSync(file));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(() => new Promise((r) => server.close(() => r())));
  return { port: (server.address() as AddressInfo).port, gets };
}

/** `data download` of RuMedDaNet into a fresh folder, with this environment and these flags. */
const download = (env: NodeJS.ProcessEnv, ...flags: string[]) =>
  rumedbenchWith(
    { ...NONE, ...env },
    'data',
    'download',
    '--dir',
    mkdtempSync(join(tmpdir(), 'rumedbench-proxied-')),
    '--tasks',
    'RuMedDaNet',
    ...flags,
  );

const DANET = MANIFEST.filter((e) => e.path.startsWith('RuMedDaNet/'));

describe('data download behind a proxy', () => {
  it.skipIf(!DATA_DIR)(
    `fetches every file through HTTP_PROXY's tunnel and verifies it (${DATA_DIR ? 'real data' : NO_DATA_REASON})`,
    async () => {
      const { port, gets } = await mirror(DATA_DIR as string);
      const proxy = await loggingProxy({ 'data.example': port });
      closers.push(() => proxy.close());
      const r = await download({ HTTP_PROXY: proxy.url }, '--base-url', `http://data.example:${port}/data`);
      expect(r.code, r.stderr).toBe(0);
      const dir = (/^data folder: (.*)$/m.exec(r.stderr) ?? [])[1] as string;
      expect(gets.sort()).toEqual(DANET.map((e) => `/data/${e.path}`).sort());
      // One tunnel at least, each to the name (the proxy resolves it), never a request sent past the proxy.
      expect(proxy.lines.length).toBeGreaterThan(0);
      expect(new Set(proxy.lines)).toEqual(new Set([`CONNECT data.example:${port}`]));
      for (const e of DANET)
        expect(
          createHash('sha256')
            .update(readFileSync(join(dir, e.path)))
            .digest('hex'),
        ).toBe(e.sha256);
      expect(r.stdout.match(/sha256/g)).toHaveLength(DANET.length);
    },
    120_000,
  );

  it('with NO_PROXY naming the host, goes past the proxy (and, offline, says to set HTTPS_PROXY)', async () => {
    const proxy = await loggingProxy({ 'data.example': 9 });
    closers.push(() => proxy.close());
    const r = await download(
      { HTTP_PROXY: proxy.url, NO_PROXY: 'localhost,.example' },
      '--base-url',
      'http://data.example:9/data',
    );
    expect(r.code).toBe(1);
    expect(proxy.lines).toEqual([]);
    expect(r.stderr).toContain(
      'no file could be fetched: this machine may be offline or behind a proxy (set HTTPS_PROXY)',
    );
  }, 120_000);

  it('refuses a proxy it cannot use, naming it, before any request', async () => {
    for (const [env, flag, said] of [
      [{ HTTPS_PROXY: 'socks5://127.0.0.1:1080' }, [], 'HTTPS_PROXY=socks5://127.0.0.1:1080'],
      [{}, ['--proxy', 'ftp://proxy.example:21'], '--proxy=ftp://proxy.example:21'],
    ] as const) {
      const r = await download(env, ...flag);
      expect(r.code).toBe(2);
      expect(r.stderr).not.toContain('retrying');
      expect(r.stderr).toContain(`${said} is not a proxy this program can use`);
      expect(r.stderr).toContain('proxies are not supported (only http:// and https://)');
    }
  }, 60_000);
});

describe('llm behind a proxy', () => {
  it('asks the model server through --proxy, every request through the tunnel', async () => {
    const server = await startFakeOpenAI({ reply: () => 'Ответ: да' });
    closers.push(() => server.close());
    const port = Number(new URL(server.url).port);
    const proxy = await loggingProxy({ 'model.example': port });
    closers.push(() => proxy.close());
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-llm-proxied-'));
    const r = await rumedbenchWith(
      NONE,
      'llm',
      '--model',
      'fake-1',
      '--no-progress',
      '--data',
      fixtureDataDir(),
      '--tasks',
      'RuMedDaNet',
      '--limit',
      '6',
      '--bootstrap',
      '0',
      '--base-url',
      `http://model.example:${port}/v1`,
      '--proxy',
      proxy.url,
      '--out',
      out,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(server.requests).toHaveLength(6);
    expect(proxy.lines.length).toBeGreaterThan(0);
    expect(new Set(proxy.lines)).toEqual(new Set([`CONNECT model.example:${port}`]));
    expect(readFileSync(join(out, 'samples.jsonl'), 'utf8').trim().split('\n')).toHaveLength(6);
  }, 120_000);
});
