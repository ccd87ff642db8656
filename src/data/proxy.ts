/**
 * Which outbound requests go through a proxy, read from the environment as curl, wget and Python's requests read it:
 * `https_proxy`/`HTTPS_PROXY` for https:// targets, `http_proxy`/`HTTP_PROXY` for http:// ones (the lower-case form
 * first, an empty one as unset; no fallback from one scheme to the other, as in curl), and `no_proxy`/`NO_PROXY` naming hosts reached
 * directly. Node 20's fetch reads none of them (issue #63): the one transport (./transport.ts) asks `proxyFor` and
 * hands fetch undici's ProxyAgent, which tunnels every request through the proxy with CONNECT.
 *
 * The proxy is the operator's setting, trusted as such: its own address is never checked against the public-address
 * guard (a hospital's proxy is usually on its private network). What goes through it is: see publicOnly in
 * ./public-address.ts.
 */
import type { buildConnector, Dispatcher, Pool as PoolType } from 'undici';
import { RumedbenchError } from '../errors.js';
import { Agent, Client, Pool, ProxyAgent } from './undici-parts.js';

export interface ProxySettings {
  /** The proxy for http:// targets. */
  httpProxy?: string | undefined;
  /** The proxy for https:// targets. */
  httpsProxy?: string | undefined;
  /** Hosts reached directly: comma- or space-separated names (with subdomains), `host:port`, or `*` for all. */
  noProxy?: string | undefined;
}

/** The first of the lower-case and the upper-case form that is set and not empty (empty means unset). */
const pick = (env: NodeJS.ProcessEnv, name: string): string | undefined =>
  [env[name.toLowerCase()], env[name.toUpperCase()]]
    .map((v) => v?.trim())
    .find((v) => v !== undefined && v !== '');

/** The proxy settings in an environment (this process's by default). */
export function proxySettings(env: NodeJS.ProcessEnv = process.env): ProxySettings {
  return {
    httpProxy: pick(env, 'http_proxy'),
    httpsProxy: pick(env, 'https_proxy'),
    noProxy: pick(env, 'no_proxy'),
  };
}

/** A proxy setting that is not an http:// or https:// URL: refused at once, never silently ignored. */
export class ProxyInvalidError extends RumedbenchError {
  constructor(
    readonly setting: string,
    readonly value: string,
    why: string,
  ) {
    super('PROXY_INVALID', `${setting}=${value} is not a proxy this program can use: ${why}`);
    this.name = 'ProxyInvalidError';
  }
}

/**
 * The proxy URL as undici takes it: `http://host:port` or `https://host:port`, credentials allowed (sent as
 * Proxy-Authorization). A bare `host:port`, the form some tools accept, is read as http://, as curl reads it.
 */
export function proxyUrl(value: string, setting: string): URL {
  const text = /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ProxyInvalidError(setting, value, 'not a URL (write http://host:port)');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ProxyInvalidError(
      setting,
      value,
      `${url.protocol}// proxies are not supported (only http:// and https://)`,
    );
  if (url.hostname === '') throw new ProxyInvalidError(setting, value, 'it names no host');
  return url;
}

/** Throws the ProxyInvalidError of the first setting that cannot be used: a command checks them before it starts. */
export function checkProxySettings(settings: ProxySettings = proxySettings()): void {
  if (settings.httpsProxy !== undefined) proxyUrl(settings.httpsProxy, 'HTTPS_PROXY');
  if (settings.httpProxy !== undefined) proxyUrl(settings.httpProxy, 'HTTP_PROXY');
}

const defaultPort = (protocol: string) => (protocol === 'https:' ? '443' : '80');

/**
 * Whether NO_PROXY sends this host directly: `*` matches everything; an entry matches its host and every subdomain
 * (`example.org`, `.example.org` and `*.example.org` alike); an entry with a port matches that port only. Host names
 * compare case-insensitively, IPv6 literals with or without brackets; address ranges (CIDR) are not read, as in
 * undici's EnvHttpProxyAgent.
 */
export function bypassesProxy(url: URL, noProxy: string | undefined): boolean {
  if (!noProxy) return false;
  const host = url.hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.+$/, '')
    .toLowerCase();
  const port = url.port || defaultPort(url.protocol);
  for (const raw of noProxy.split(/[\s,]+/)) {
    if (raw === '') continue;
    if (raw === '*') return true;
    // `[::1]:8080`, `::1` (an IPv6 address has no port unbracketed), `host:8080`, `host`.
    const m = raw.startsWith('[')
      ? /^\[([^\]]*)\](?::(\d+))?$/.exec(raw)
      : raw.split(':').length > 2
        ? [raw, raw, undefined]
        : /^([^:]*)(?::(\d+))?$/.exec(raw);
    const name = (m?.[1] ?? raw)
      .replace(/^\*?\.+/, '')
      .replace(/\.+$/, '')
      .toLowerCase();
    if (m?.[2] && m[2] !== port) continue;
    if (name !== '' && (host === name || host.endsWith(`.${name}`))) return true;
  }
  return false;
}

/** Names and addresses of this machine: a proxy elsewhere would reach its own machine instead (Go's rule too). */
const THIS_MACHINE = /^(localhost|.*\.localhost|127(\.\d{1,3}){3}|::1)$/i;

/**
 * The proxy a request to this URL goes through, or undefined where it goes directly: NO_PROXY's hosts, and this
 * machine (localhost, 127.0.0.0/8, ::1), which a proxy elsewhere could not reach.
 */
export function proxyFor(target: string | URL, settings: ProxySettings): URL | undefined {
  const url = new URL(target);
  if (THIS_MACHINE.test(url.hostname.replace(/^\[|\]$/g, '').replace(/\.+$/, ''))) return undefined;
  const value =
    url.protocol === 'https:'
      ? settings.httpsProxy
      : url.protocol === 'http:'
        ? settings.httpProxy
        : undefined;
  if (value === undefined || bypassesProxy(url, settings.noProxy)) return undefined;
  return proxyUrl(value, url.protocol === 'https:' ? 'HTTPS_PROXY' : 'HTTP_PROXY');
}

/** Checks a target's host before a tunnel to it is opened; rejects to refuse it. */
export type BeforeTunnel = (hostname: string) => Promise<void>;

/**
 * undici's ProxyAgent for this proxy. With `beforeTunnel`, every connection through it first checks the target's
 * host (the proxy's own address is not checked: the operator set it); the check runs inside the dispatcher, at each
 * connection it opens, so no caller can skip it.
 */
export function proxyAgent(proxy: URL, beforeTunnel?: BeforeTunnel): Dispatcher {
  // Tunnelled for http:// targets too (CONNECT host:80): undici's plain forwarding (proxyTunnel: false) would not go
  // through the factory below, and so not through the check.
  if (!beforeTunnel) return new ProxyAgent({ uri: proxy.href, proxyTunnel: true });
  return new ProxyAgent({
    uri: proxy.href,
    proxyTunnel: true,
    // The factory undici uses for each target's pool, with the tunnel's connect (`opts.connect`) wrapped.
    factory: (origin: string | URL, opts: object) => {
      const o = opts as PoolType.Options & { connections?: number | null; connect: buildConnector.connector };
      const tunnel = o.connect;
      const connect: buildConnector.connector = (target, callback) => {
        beforeTunnel(target.hostname).then(
          () => tunnel(target, callback),
          (e: Error) => callback(e, null),
        );
      };
      return o.connections === 1
        ? new Client(origin, { ...o, connect })
        : new Pool(origin, { ...o, connect });
    },
  });
}

let direct: Dispatcher | undefined;
const viaProxy = new Map<string, Dispatcher>();

/**
 * The dispatcher for a request with no address guard: through the proxy `proxyFor` names, or directly. One per
 * proxy, kept for the process, so that connections are reused as fetch's own global dispatcher reuses them.
 */
export function plainDispatcher(target: string | URL, settings: ProxySettings): Dispatcher {
  const proxy = proxyFor(target, settings);
  if (!proxy) {
    direct ??= new Agent();
    return direct;
  }
  let agent = viaProxy.get(proxy.href);
  if (!agent) {
    agent = proxyAgent(proxy);
    viaProxy.set(proxy.href, agent);
  }
  return agent;
}
