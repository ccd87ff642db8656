/**
 * Which addresses a model server may have when this process must not reach its own machine, its private network or a
 * cloud's metadata service (server-side request forgery): the platform's workers, which ask servers that teams
 * registered. One pure check of an address (`addressProblem`), one of a host name's text (`hostNameProblem`), and
 * the resolving layer: a host is checked on every address it resolves to, when an endpoint is registered
 * (`resolvedHostProblem`) and again at every connection (`publicOnly`), where the socket goes to the address that was
 * checked, so that a name whose DNS changes after its check still never connects to a refused address.
 *
 * Cloud metadata and platform services (`platformAddressProblem`) are refused everywhere, `--allow-private` or not:
 * a private model server is a real need, a request to the machine's metadata service is only ever an attack on it.
 *
 * Invariant: a connection made through `publicOnly` goes only to an address `addressProblem` passes, or, with
 * `allowPrivate`, to one `platformAddressProblem` passes. Behind the operator's proxy (./proxy.ts), the proxy is asked
 * for a tunnel only to a host every address of which passes here (the proxy resolves it again: see `publicOnly`).
 */
import type { LookupAddress } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';
import { RumedbenchError } from '../errors.js';
import { type ProxySettings, proxyAgent, proxyFor, proxySettings } from './proxy.js';
import { Agent } from './undici-parts.js';

/** What each refused range is, in words a person can act on. */
const RANGE_WORDS: Record<string, string> = {
  unspecified: 'the unspecified address (this machine)',
  loopback: 'a loopback address (this machine)',
  linkLocal: 'a link-local address (where cloud metadata services answer, 169.254.169.254 among them)',
  private: 'a private address (10/8, 172.16/12, 192.168/16)',
  carrierGradeNat:
    "a shared (carrier-grade NAT) address, 100.64/10 (Alibaba Cloud's metadata service is at 100.100.100.200)",
  broadcast: 'the broadcast address',
  multicast: 'a multicast address',
  reserved: 'a reserved address',
  as112: 'a reserved address (AS112)',
  amt: 'a reserved address (AMT)',
  uniqueLocal: "a unique-local address, fc00::/7 (AWS's IPv6 metadata service is at fd00:ec2::254)",
  deprecatedSiteLocal: 'a site-local address (fec0::/10)',
  teredo: 'a Teredo address (2001::/32)',
  benchmarking: 'a reserved address (benchmarking)',
  discard: 'a reserved address (discard-only, 100::/64)',
  orchid2: 'a reserved address (ORCHIDv2)',
  deprecatedOrchid: 'a reserved address (ORCHID)',
  droneRemoteIdProtocolEntityTags: 'a reserved address (DRIP)',
  segmentRouting: 'a reserved address (segment routing, 5f00::/16)',
  as112v6: 'a reserved address (AS112)',
};

/** Host names that reach this machine whatever the resolver says. */
const LOCAL_NAMES = /^(localhost|.*\.localhost|localhost\.localdomain|ip6-localhost|ip6-loopback)$/i;
/**
 * Host names of clouds' metadata services: Google Cloud's metadata.google.internal (and `metadata`, its short name;
 * metadata.goog), AWS's instance-data, Tencent Cloud's metadata.tencentyun.com. What they resolve to is refused too.
 */
const METADATA_NAMES =
  /^(metadata|metadata\.google\.internal|metadata\.goog|instance-data(\..*)?|metadata\.tencentyun\.com)$/i;

/**
 * Cloud metadata and platform services, each where it is documented. Refused even with `--allow-private`: a model
 * server never lives there, and a request there reads the machine's credentials or talks to its cloud's fabric.
 */
const PLATFORM_LIST: readonly [string, string][] = [
  // docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html;
  // learn.microsoft.com/azure/virtual-machines/instance-metadata-service;
  // cloud.google.com/compute/docs/metadata/querying-metadata; docs.oracle.com/iaas/Content/Compute/Tasks/gettingmetadata.htm;
  // docs.digitalocean.com/reference/api/metadata/; docs.openstack.org/nova/latest/user/metadata.html
  [
    '169.254.169.254',
    'the instance metadata service of AWS, Azure, Google Cloud, Oracle Cloud, IBM Cloud, DigitalOcean, OpenStack and others',
  ],
  // docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html (the IPv6 endpoint)
  ['fd00:ec2::254', "AWS's IPv6 instance metadata service"],
  // docs.aws.amazon.com/AmazonECS/latest/developerguide/task-iam-roles.html (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI)
  ['169.254.170.2', "AWS ECS's task metadata and credentials endpoint"],
  // docs.aws.amazon.com/eks/latest/userguide/pod-id-how-it-works.html
  ['169.254.170.23', "the EKS Pod Identity Agent (AWS's credentials for pods)"],
  ['fd00:ec2::23', "the EKS Pod Identity Agent (AWS's credentials for pods)"],
  // learn.microsoft.com/azure/virtual-network/what-is-ip-address-168-63-129-16
  [
    '168.63.129.16',
    "Azure's platform wireserver (learn.microsoft.com/azure/virtual-network/what-is-ip-address-168-63-129-16)",
  ],
  // alibabacloud.com/help/ecs/user-guide/view-instance-metadata
  ['100.100.100.200', "Alibaba Cloud's instance metadata service"],
  // cloud.google.com/compute/docs/metadata/querying-metadata (IPv6-only instances)
  ['fd20:ce::254', "Google Cloud's IPv6 metadata server"],
  // cloud.tencent.com/document/product/213/4934 (metadata.tencentyun.com)
  ['169.254.0.23', "Tencent Cloud's instance metadata service"],
  // docs.oracle.com/iaas/Content/Compute/Tasks/gettingmetadata.htm (IPv6)
  ['fd00:c1::a9fe:a9fe', "Oracle Cloud's IPv6 instance metadata service"],
  // docs.oracle.com/en/cloud/iaas-classic/ (Oracle Cloud Infrastructure Classic's instance metadata)
  ['192.0.0.192', "Oracle Cloud Classic's instance metadata service"],
];
const PLATFORM = new Map(PLATFORM_LIST.map(([a, what]) => [ipaddr.parse(a).toString(), what]));

const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');
const NAT64_LOCAL = ipaddr.IPv6.parseCIDR('64:ff9b:1::/48');

const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR('64:ff9b::/96');
const v4Of = (bytes: number[], at: number) => new ipaddr.IPv4(bytes.slice(at, at + 4));

/** The IPv4 address an IPv6 one carries, and in which form, where it is one of the forms that carry one. */
function embeddedV4(a: ipaddr.IPv6): { v4: ipaddr.IPv4; form: string } | undefined {
  const b = a.toByteArray();
  const zeros = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  const range = a.range();
  if (range === 'ipv4Mapped') return { v4: v4Of(b, 12), form: 'IPv4-mapped, ::ffff:a.b.c.d' };
  if (range === 'rfc6145') return { v4: v4Of(b, 12), form: 'IPv4-translated, ::ffff:0:a.b.c.d' };
  // ::a.b.c.d (deprecated, RFC 4291 §2.5.5.1), but not :: or ::1, which are addresses of their own.
  if (range !== 'unspecified' && range !== 'loopback' && zeros(0, 12))
    return { v4: v4Of(b, 12), form: 'IPv4-compatible, ::a.b.c.d' };
  // The well-known NAT64 prefix (RFC 6052): a translator on the way connects to the IPv4 address in the last 32 bits.
  if (a.match(NAT64_WELL_KNOWN)) return { v4: v4Of(b, 12), form: 'NAT64, 64:ff9b::/96' };
  // 6to4 (RFC 3056): the relay's IPv4 address in bits 16-47.
  if (range === '6to4') return { v4: v4Of(b, 2), form: '6to4, 2002::/16' };
  return undefined;
}

function v4Problem(a: ipaddr.IPv4): string | undefined {
  const range = a.range();
  return range === 'unicast' ? undefined : (RANGE_WORDS[range] ?? `a reserved address (${range})`);
}

/**
 * Why a connection to this IP address is refused, or undefined for a public one: this machine (loopback,
 * unspecified), link-local (cloud metadata), private, shared (CGNAT 100.64/10), unique-local, site-local, multicast,
 * broadcast and reserved ranges, and anything outside IPv6's global unicast space (2000::/3). An IPv6 address that
 * carries an IPv4 one (IPv4-mapped, IPv4-translated, IPv4-compatible, NAT64 64:ff9b::/96, 6to4) is judged by the IPv4
 * address it carries; the local-use NAT64 prefix 64:ff9b:1::/48 is refused whole, since where the IPv4 address sits
 * in it is the network's own choice. Anything that is not an address is refused.
 *
 * @example
 * addressProblem('8.8.8.8') // undefined
 * addressProblem('::ffff:0:7f00:1') // '::ffff:0:7f00:1 carries 127.0.0.1 (IPv4-translated, …), a loopback address (this machine)'
 */
export function addressProblem(address: string): string | undefined {
  const text = address.replace(/^\[|\]$/g, '');
  const why = predicate(text);
  return why ? `${text} ${why}` : undefined;
}

const PLATFORM_END = "a cloud's metadata or platform service is never a model server";

/** Where an address is a cloud's metadata or platform service (itself, or the IPv4 address it carries), or undefined. */
function platformPredicate(a: ipaddr.IPv4 | ipaddr.IPv6): string | undefined {
  const own = PLATFORM.get(a.toString());
  if (own) return `is ${own}: ${PLATFORM_END}`;
  const carried = a.kind() === 'ipv6' ? embeddedV4(a as ipaddr.IPv6) : undefined;
  const what = carried ? PLATFORM.get(carried.v4.toString()) : undefined;
  return carried && what
    ? `carries ${carried.v4.toString()} (${carried.form}), ${what}: ${PLATFORM_END}`
    : undefined;
}

/**
 * Why a connection to this IP address is refused even where private addresses are allowed: it is a cloud's metadata
 * or platform service (169.254.169.254, fd00:ec2::254, 168.63.129.16, 100.100.100.200, 169.254.170.2, …), itself or
 * carried in an IPv6 address. Undefined for any other address, and for what is not an address.
 *
 * @example
 * platformAddressProblem('10.0.0.5') // undefined
 * platformAddressProblem('168.63.129.16') // "168.63.129.16 is Azure's platform wireserver (…): …"
 */
export function platformAddressProblem(address: string): string | undefined {
  const text = address.replace(/^\[|\]$/g, '');
  let a: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    a = ipaddr.parse(text);
  } catch {
    return undefined;
  }
  const why = platformPredicate(a);
  return why ? `${text} ${why}` : undefined;
}

/** What is wrong with an address, as the end of a sentence about it ("is …", "carries …"), or undefined. */
function predicate(text: string, allowPrivate = false): string | undefined {
  let a: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    // parse, not process: an IPv4-mapped address is kept as IPv6, so that the message names what was given.
    a = ipaddr.parse(text);
  } catch {
    return allowPrivate ? undefined : 'is not an IP address';
  }
  const platform = platformPredicate(a);
  if (platform || allowPrivate) return platform;
  if (a.kind() === 'ipv4') {
    const why = v4Problem(a as ipaddr.IPv4);
    return why ? `is ${why}` : undefined;
  }
  const v6 = a as ipaddr.IPv6;
  const carried = embeddedV4(v6);
  if (carried) {
    const why = v4Problem(carried.v4);
    return why ? `carries ${carried.v4.toString()} (${carried.form}), ${why}` : undefined;
  }
  if (v6.match(NAT64_LOCAL)) return 'is a local-use NAT64 address (64:ff9b:1::/48)';
  const range = v6.range();
  if (range !== 'unicast') return `is ${RANGE_WORDS[range] ?? `a reserved address (${range})`}`;
  if (!v6.match(GLOBAL_UNICAST)) return 'is outside the global unicast space (2000::/3)';
  return undefined;
}

/** A host without an IPv6 literal's brackets or a name's trailing dots (`localhost.` is `localhost`), lower case. */
const bare = (host: string) =>
  host
    .replace(/^\[|\]$/g, '')
    .replace(/\.+$/, '')
    .toLowerCase();

/** A URL's host as a resolver takes it: without an IPv6 literal's brackets or a name's trailing dots, lower case. */
export function hostOf(url: string | URL): string {
  return bare(new URL(url).hostname);
}

/**
 * Why a host is refused by its text alone even where private addresses are allowed, or undefined: a literal
 * metadata or platform address (`platformAddressProblem`), or a metadata service's name.
 */
export function platformHostProblem(host: string): string | undefined {
  const h = bare(host);
  if (ipaddr.isValid(h)) return platformAddressProblem(h);
  if (METADATA_NAMES.test(h)) return `${host} names a cloud's metadata service: ${PLATFORM_END}`;
  return undefined;
}

/**
 * Why a host is refused by its text alone, or undefined: a literal address (`addressProblem`), or a name that means
 * this machine or a metadata service (localhost, *.localhost, metadata.google.internal, instance-data, …; trailing
 * dots do not hide one: `localhost.` is `localhost`). A name that passes still has to resolve to public addresses.
 */
export function hostNameProblem(host: string): string | undefined {
  const h = bare(host);
  if (ipaddr.isValid(h)) return addressProblem(h);
  if (h === '' || LOCAL_NAMES.test(h) || METADATA_NAMES.test(h))
    return `${host} names this machine or a metadata service`;
  return undefined;
}

/** Port 0 is no server's port (a connection to it fails, or goes where the system picks): refused by its text. */
export function portProblem(url: string | URL): string | undefined {
  return new URL(url).port === '0' ? `${hostOf(url)}: port 0 is no server's port` : undefined;
}

export interface ResolvedAddress {
  address: string;
  family: number;
}
/** Every address a name resolves to (the system's resolver by default; tests inject their own). */
export type Resolve = (host: string) => Promise<readonly ResolvedAddress[]>;

export const systemResolve: Resolve = (host) => dnsLookup(host, { all: true });

/** A refused connection: the host names or resolves to an address `addressProblem` refuses. */
export class PrivateAddressError extends RumedbenchError {
  constructor(
    readonly host: string,
    /** What is wrong with the host, in words. */
    readonly problem: string,
    hint?: string,
  ) {
    super('PRIVATE_ADDRESS', `${problem}${hint ? `; ${hint}` : ''}`);
    this.name = 'PrivateAddressError';
  }
}

/**
 * The host's addresses when every one of them passes; otherwise a PrivateAddressError naming the first refused. A
 * name that does not resolve throws the resolver's own error (ENOTFOUND), for the caller to say so.
 */
export async function publicAddresses(
  host: string,
  resolve: Resolve = systemResolve,
  hint?: string,
  options: AllowPrivate = {},
): Promise<ResolvedAddress[]> {
  const h = bare(host);
  // A metadata service is said without the hint: no flag lets a request go there.
  const platform = platformHostProblem(host);
  if (platform) throw new PrivateAddressError(host, platform);
  const named = options.allowPrivate ? undefined : hostNameProblem(host);
  if (named) throw new PrivateAddressError(host, named, hint);
  if (ipaddr.isValid(h)) return [{ address: h, family: ipaddr.parse(h).kind() === 'ipv4' ? 4 : 6 }];
  const list = await resolve(h);
  if (list.length === 0)
    throw Object.assign(new Error(`${host} resolves to no address`), { code: 'ENOTFOUND' });
  // Every address, not the first: a client may fall back to any of them (happy eyeballs).
  for (const r of list) {
    const why = predicate(r.address, options.allowPrivate);
    if (why)
      throw new PrivateAddressError(
        host,
        `${host} resolves to ${r.address}, which ${why}`,
        platformAddressProblem(r.address) ? undefined : hint,
      );
  }
  return [...list];
}

/** Private addresses allowed (`--allow-private`): only metadata and platform addresses are refused. */
export interface AllowPrivate {
  allowPrivate?: boolean;
}

/**
 * Why a host is refused once resolved, or undefined: its text (`hostNameProblem`), then every address it resolves
 * to. A name that does not resolve is refused too (nothing could be checked), except with `allowPrivate`, where only
 * metadata and platform addresses are refused. `hint` ends the words where a flag would lift the refusal.
 */
export async function resolvedHostProblem(
  host: string,
  resolve: Resolve = systemResolve,
  options: AllowPrivate & { hint?: string } = {},
): Promise<string | undefined> {
  try {
    await publicAddresses(host, resolve, options.hint, options);
    return undefined;
  } catch (e) {
    if (e instanceof PrivateAddressError) return e.message;
    // A private server's name may resolve only where the workers run: checked again at their every connection.
    if (options.allowPrivate) return undefined;
    const code = (e as { code?: unknown }).code;
    return `${host} does not resolve${typeof code === 'string' ? ` (${code})` : ''}: its addresses cannot be checked${options.hint ? `; ${options.hint}` : ''}`;
  }
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for net.connect and tls.connect: resolves the name, checks every address, and hands the socket only
 * the checked ones, so that the connection goes to what was checked (no second resolution between check and use).
 */
export function publicOnlyLookup(resolve: Resolve = systemResolve, hint?: string, o: AllowPrivate = {}) {
  return (
    hostname: string,
    options: { family?: number | string | undefined; all?: boolean | undefined },
    callback: LookupCallback,
  ): void => {
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family;
    publicAddresses(hostname, resolve, hint, o).then(
      (list) => {
        const wanted = family === 4 || family === 6 ? list.filter((r) => r.family === family) : list;
        const first = wanted[0];
        if (!first) {
          callback(
            Object.assign(new Error(`${hostname} has no IPv${family} address`), { code: 'ENOTFOUND' }),
            '',
          );
          return;
        }
        if (options.all)
          callback(
            null,
            wanted.map((r) => ({ address: r.address, family: r.family })),
          );
        else callback(null, first.address, first.family);
      },
      (e: NodeJS.ErrnoException) => callback(e, ''),
    );
  };
}

/**
 * fetch's `dispatcher` (an undici Dispatcher), opaque to callers: a user's project whose `lib` has the DOM's fetch
 * types (RequestInit without `dispatcher`) compiles these declarations as well (issue #63).
 */
type Dispatcher = object;

/** Connections to public addresses only (see `publicOnly`). */
export interface ConnectGuard {
  /** Throws a PrivateAddressError when the URL's host is refused by its text (a literal address is never resolved). */
  check(url: string | URL): void;
  /**
   * The dispatcher for a request to this URL, for undici's fetch (./transport.ts): its every connection resolves the
   * host and checks each address first, whether it goes directly or through the proxy the environment names.
   */
  dispatcher(url: string | URL): Dispatcher;
}

/**
 * A guard for fetch: a literal address is checked before the request, and a name at every connection the
 * dispatcher opens, with `resolve` (the system's resolver by default). `hint` ends each refusal's message (what the
 * person may do about it). With `allowPrivate`, private addresses pass and metadata and platform addresses are
 * still refused; port 0 always is.
 *
 * Behind a proxy (`proxy`, the environment's HTTPS_PROXY/HTTP_PROXY/NO_PROXY by default; ./proxy.ts) the proxy's own
 * address is not checked: it is the operator's setting, and usually private. The target is: before each tunnel is
 * opened its name is resolved here and every address checked, as for a direct connection, so a proxy is no way
 * around the guard. The proxy resolves the name again to connect, by name, as proxies that allow domains by name
 * need; a name whose DNS changes between the two lookups is the proxy's to refuse (docs/operators.md says so).
 *
 * @example
 * const guard = publicOnly({ hint: 'start the worker with --allow-private if the server really is there' });
 * guard.check(url);
 * await fetch(url, { dispatcher: guard.dispatcher(url) }); // undici's fetch
 */
export function publicOnly(
  o: { resolve?: Resolve; hint?: string; proxy?: ProxySettings } & AllowPrivate = {},
): ConnectGuard {
  const settings = o.proxy ?? proxySettings();
  const allow = { allowPrivate: o.allowPrivate ?? false };
  let direct: Dispatcher | undefined;
  const proxied = new Map<string, Dispatcher>();
  // The check reads only the URL's text: one that passed passes again (a worker asks one URL thousands of times, and
  // parsing it each time was a tenth of a worker's CPU per request, #64). Bounded: URLs are few.
  const passed = new Set<string>();
  return {
    check(url) {
      const text = String(url);
      if (passed.has(text)) return;
      const host = hostOf(url);
      const fixed = platformHostProblem(host) ?? portProblem(url);
      if (fixed) throw new PrivateAddressError(host, fixed);
      const why = o.allowPrivate ? undefined : hostNameProblem(host);
      if (why) throw new PrivateAddressError(host, why, o.hint);
      if (passed.size < 1000) passed.add(text);
    },
    dispatcher(url) {
      const proxy = proxyFor(url, settings);
      if (!proxy) {
        direct ??= new Agent({ connect: { lookup: publicOnlyLookup(o.resolve, o.hint, allow) } });
        return direct;
      }
      let agent = proxied.get(proxy.href);
      if (!agent) {
        agent = proxyAgent(proxy, async (host) => {
          try {
            await publicAddresses(host, o.resolve, o.hint, allow);
          } catch (e) {
            if (e instanceof PrivateAddressError) throw e;
            // The proxy might resolve it, but what it resolves to could not be checked here: not asked.
            const code = (e as { code?: unknown }).code;
            throw new PrivateAddressError(
              host,
              `${host} does not resolve on this machine${typeof code === 'string' ? ` (${code})` : ''}: its addresses cannot be checked, so the proxy is not asked to connect to it`,
            );
          }
        });
        proxied.set(proxy.href, agent);
      }
      return agent;
    },
  };
}

/** The PrivateAddressError behind a failed fetch (`fetch failed` → its cause), if that is why it failed. */
export function privateAddressCause(e: unknown): PrivateAddressError | undefined {
  for (let c: unknown = e, depth = 0; c && depth < 5; c = (c as { cause?: unknown }).cause, depth++)
    if (c instanceof PrivateAddressError) return c;
  return undefined;
}
