import { createServer as createHttpServer, type Server } from 'node:http';
import { type AddressInfo, createServer as createNetServer, type Server as NetServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type LoggingProxy, loggingProxy } from '../../test/helpers/connect-proxy.js';
import { resolver } from '../../test/helpers/resolver.js';
import { bypassesProxy, ProxyInvalidError, proxyFor, proxySettings } from './proxy.js';
import { PrivateAddressError, publicOnly } from './public-address.js';
import { send, TransportError } from './transport.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

/** A model server on loopback that counts its requests, and a logging proxy that maps `names` to it. */
async function modelBehindProxy(
  names: string[],
): Promise<{ proxy: LoggingProxy; hits: string[]; port: number }> {
  const hits: string[] = [];
  const server: Server = createHttpServer((req, res) => {
    hits.push(`${req.method} ${req.headers.host} ${req.url}`);
    res.setHeader('content-type', 'application/json').end('{"ok":true}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(() => new Promise((r) => server.close(() => r())));
  const port = (server.address() as AddressInfo).port;
  const proxy = await loggingProxy(Object.fromEntries(names.map((n) => [n, port])));
  closers.push(() => proxy.close());
  return { proxy, hits, port };
}

const once = { maxBytes: 1024, retry: { retries: 0 }, timeoutMs: 10_000 };

describe('proxy settings: read as curl reads them', () => {
  it('takes the lower-case form first, per scheme, with no fallback; an empty value is unset', () => {
    expect(
      proxySettings({
        HTTPS_PROXY: 'http://upper:1',
        https_proxy: 'http://lower:2',
        HTTP_PROXY: 'http://h:3',
      }),
    ).toEqual({ httpsProxy: 'http://lower:2', httpProxy: 'http://h:3', noProxy: undefined });
    expect(proxySettings({ https_proxy: '', HTTPS_PROXY: 'http://upper:1' }).httpsProxy).toBe(
      'http://upper:1',
    );
    expect(proxySettings({ https_proxy: ' ', HTTPS_PROXY: '' }).httpsProxy).toBeUndefined();
    const s = proxySettings({ HTTP_PROXY: 'http://only-http:3128' });
    expect(proxyFor('https://api.example/v1', s)).toBeUndefined();
    expect(proxyFor('http://api.example/v1', s)?.href).toBe('http://only-http:3128/');
    // A bare host:port is read as http://, as curl reads it.
    expect(proxyFor('https://api.example/', { httpsProxy: 'proxy.hospital:3128' })?.href).toBe(
      'http://proxy.hospital:3128/',
    );
  });

  it('sends NO_PROXY hosts, their subdomains and this machine directly, ports respected', () => {
    const no = 'models.lan, .intra.example,*.corp.example  ,api.example:8443,[::1]:9,fd00::7';
    const by = (u: string) => bypassesProxy(new URL(u), no);
    expect(
      [
        'http://models.lan/',
        'http://a.models.lan/',
        'https://x.intra.example/',
        'https://intra.example/',
        'https://a.b.corp.example/',
        'https://api.example:8443/',
        'https://MODELS.LAN./',
        'http://[fd00::7]:80/',
      ].map(by),
    ).toEqual([true, true, true, true, true, true, true, true]);
    expect(
      ['http://notmodels.lan/', 'https://api.example/', 'https://corp.example.org/', 'http://[fd00::8]/'].map(
        by,
      ),
    ).toEqual([false, false, false, false]);
    expect(bypassesProxy(new URL('https://anything.example/'), '*')).toBe(true);
    const s = { httpsProxy: 'http://p:1', httpProxy: 'http://p:1' };
    expect(
      ['http://localhost:8000/', 'http://127.0.0.5/', 'http://[::1]:8000/', 'http://a.localhost/'].map((u) =>
        proxyFor(u, s),
      ),
    ).toEqual([undefined, undefined, undefined, undefined]);
  });

  it('refuses a proxy setting it cannot use, naming the variable, instead of ignoring it', () => {
    for (const [value, why] of [
      ['socks5://p:1080', 'socks5:// proxies are not supported (only http:// and https://)'],
      ['http://', 'not a URL (write http://host:port)'],
    ] as const) {
      const e = (() => {
        try {
          return proxyFor('https://api.example/', { httpsProxy: value });
        } catch (x) {
          return x;
        }
      })();
      expect(e).toBeInstanceOf(ProxyInvalidError);
      expect((e as ProxyInvalidError).code).toBe('PROXY_INVALID');
      expect((e as ProxyInvalidError).message).toBe(
        `HTTPS_PROXY=${value} is not a proxy this program can use: ${why}`,
      );
    }
  });
});

describe('the transport through a proxy (CONNECT), as a hospital reaches the internet', () => {
  it('reaches a server only the proxy can reach, and NO_PROXY sends it past the proxy', async () => {
    const { proxy, hits, port } = await modelBehindProxy(['model.example']);
    const url = `http://model.example:${port}/v1/models`;
    const a = await send(url, () => ({}), { ...once, proxy: { httpProxy: proxy.url } });
    expect([a.status, a.text]).toEqual([200, '{"ok":true}']);
    expect(proxy.lines).toEqual([`CONNECT model.example:${port}`]);
    expect(hits).toEqual([`GET model.example:${port} /v1/models`]);
    // NO_PROXY names it: the request goes directly, where the made-up name reaches nothing.
    const e = await send(url, () => ({}), {
      ...once,
      proxy: { httpProxy: proxy.url, noProxy: 'example' },
    }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(TransportError);
    expect([proxy.lines.length, hits.length]).toEqual([1, 1]);
  });

  it('tunnels https: the proxy sees CONNECT host:443 and carries the TLS ClientHello with the name in it', async () => {
    const first: Buffer[] = [];
    const tls: NetServer = createNetServer((s) => {
      s.once('data', (d: Buffer) => {
        first.push(d);
        s.destroy();
      });
    });
    await new Promise<void>((r) => tls.listen(0, '127.0.0.1', r));
    closers.push(() => new Promise((r) => tls.close(() => r())));
    const proxy = await loggingProxy({ 'secure.example': (tls.address() as AddressInfo).port });
    closers.push(() => proxy.close());
    const e = await send(
      'https://secure.example/v1/chat/completions',
      () => ({ method: 'POST', body: '{}' }),
      {
        ...once,
        proxy: { httpsProxy: proxy.url, httpProxy: 'http://127.0.0.1:9' },
      },
    ).catch((x: unknown) => x);
    // The TLS server hung up after the ClientHello: no answer, but the handshake went through the tunnel.
    expect(e).toBeInstanceOf(TransportError);
    expect(proxy.lines).toEqual(['CONNECT secure.example:443']);
    expect(first).toHaveLength(1);
    expect(first[0]?.[0]).toBe(0x16); // a TLS handshake record
    expect(first[0]?.includes(Buffer.from('secure.example'))).toBe(true); // its SNI: the target's name
  });
});

describe('the address guard behind a proxy: the proxy is trusted, the target is still checked', () => {
  it('passes a public target through a proxy on a loopback address, and refuses private ones before any CONNECT', async () => {
    const { proxy, hits, port } = await modelBehindProxy(['model.example', 'inside.example', 'imds.example']);
    const guard = (allowPrivate = false) =>
      publicOnly({
        resolve: resolver({
          'model.example': ['93.184.215.14'],
          'inside.example': ['93.184.215.14', '10.0.0.5'],
          'imds.example': ['169.254.169.254'],
        }),
        hint: 'not through the proxy either',
        proxy: { httpProxy: proxy.url },
        allowPrivate,
      });
    // The proxy's own address is loopback, which the guard refuses as a target: as the operator's setting, it is used.
    const ok = await send(`http://model.example:${port}/v1/models`, () => ({}), { ...once, guard: guard() });
    expect(ok.status).toBe(200);
    expect(proxy.lines).toEqual([`CONNECT model.example:${port}`]);
    const refused = async (url: string, allowPrivate = false) => {
      const e = await send(url, () => ({}), { ...once, guard: guard(allowPrivate) }).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(PrivateAddressError);
      return (e as PrivateAddressError).message;
    };
    expect(await refused(`http://inside.example:${port}/`)).toBe(
      'inside.example resolves to 10.0.0.5, which is a private address (10/8, 172.16/12, 192.168/16); not through the proxy either',
    );
    expect(await refused(`http://imds.example:${port}/`, true)).toMatch(
      /^imds\.example resolves to 169\.254\.169\.254, which is the instance metadata service of AWS/,
    );
    expect(await refused(`http://unknown.example:${port}/`)).toBe(
      'unknown.example does not resolve on this machine (ENOTFOUND): its addresses cannot be checked, so the proxy is not asked to connect to it',
    );
    expect(await refused('http://10.0.0.5/')).toBe(
      '10.0.0.5 is a private address (10/8, 172.16/12, 192.168/16); not through the proxy either',
    );
    // None of the refused targets was asked of the proxy, and the model server saw only the one request.
    expect(proxy.lines).toEqual([`CONNECT model.example:${port}`]);
    expect(hits).toHaveLength(1);
  });
});
