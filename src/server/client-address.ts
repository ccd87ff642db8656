/**
 * Who a request is from, for rates, quotas and the sign-in lockout. X-Forwarded-For is read only from a connection
 * whose address is a trusted proxy's (`--trusted-proxies 10.0.0.0/8,::1`, as Express's `trust proxy` and Caddy's
 * `trusted_proxies` take them): each proxy appends the address it saw, so the client is the right-most value that no
 * trusted proxy wrote, and a client that reaches the server directly is itself, whatever it writes (issue #57: with
 * a hop count and the server reachable directly, a forged header got 8 of 8 uploads past a limit of 3).
 *
 * A bare hop count (`--trusted-proxies 1`) is still taken, with a warning at start-up: it trusts the header from
 * whoever connects. IPv6 clients are grouped by /64: one subscriber gets a whole /64, so its addresses are one
 * uploader.
 *
 * Invariant: with a list of trusted proxies, a request whose peer is not on it is counted by its peer's address.
 */
import ipaddr from 'ipaddr.js';

type Network = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** Named sets, as Express (`loopback`, `linklocal`, `uniquelocal`) and Caddy (`private_ranges`) name them. */
const NAMED: Record<string, readonly string[]> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
  private_ranges: ['127.0.0.0/8', '::1/128', '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

/** The proxies whose X-Forwarded-For is read: addresses and networks. */
export class ProxyList {
  private readonly networks: Network[];

  /** `entries`: addresses, networks (CIDR) and named sets; a bad one is an error naming it. */
  constructor(readonly entries: readonly string[]) {
    this.networks = entries.flatMap((e) => (NAMED[e.toLowerCase()] ?? [e]).map(parseNetwork));
  }

  trusts(address: string): boolean {
    let a: ipaddr.IPv4 | ipaddr.IPv6;
    try {
      a = ipaddr.process(address);
    } catch {
      return false;
    }
    return this.networks.some(([net, bits]) => net.kind() === a.kind() && a.match([net, bits] as never));
  }
}

function parseNetwork(text: string): Network {
  try {
    if (text.includes('/')) {
      const [net, bits] = ipaddr.parseCIDR(text);
      // An IPv4-mapped network is the IPv4 one (peers are compared in their canonical spelling).
      if (net.kind() === 'ipv6' && (net as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96)
        return [(net as ipaddr.IPv6).toIPv4Address(), bits - 96];
      return [net, bits];
    }
    const a = ipaddr.process(text);
    return [a, a.kind() === 'ipv4' ? 32 : 128];
  } catch {
    throw new Error(
      `"${text.slice(0, 80)}" is not an address, a network (CIDR, e.g. 10.0.0.0/8) or one of ${Object.keys(NAMED).join(', ')}`,
    );
  }
}

/**
 * The proxies of yours in front: a list (read only from their connections), or a bare hop count (the value that many
 * places from the right of X-Forwarded-For, from whoever connects: warned about at start-up). 0: none.
 */
export type TrustedProxies = number | ProxyList;

/**
 * `--trusted-proxies`: comma-separated addresses, networks and named sets (loopback, linklocal, uniquelocal,
 * private_ranges), or a bare hop count.
 *
 * @example
 * parseTrustedProxies('10.0.0.0/8, ::1') // a ProxyList
 * parseTrustedProxies('1') // 1 (a hop count, warned about at start-up)
 */
export function parseTrustedProxies(value: string): TrustedProxies {
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const entries = text
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  if (entries.length === 0) return 0;
  return new ProxyList(entries);
}

/** Why a hop count is risky, for the start-up warning; undefined for a list or none. */
export function hopCountWarning(trusted: TrustedProxies | undefined): string | undefined {
  if (typeof trusted !== 'number' || trusted <= 0) return undefined;
  return `--trusted-proxies ${trusted}: a hop count reads X-Forwarded-For from whoever connects, so a client that reaches this server directly (not through your proxy) chooses the address its uploads, quotas and admin sign-ins are counted by; give your proxies' addresses or networks instead (--trusted-proxies 10.0.0.0/8, or loopback for a proxy on this machine)`;
}

/**
 * The client's address. No trusted proxies: the socket's peer. A list: the peer unless it is on the list; then
 * X-Forwarded-For from the right, past every value on the list, to the first that is not (a value that is not an
 * address stops the walk at the last proxy's). A hop count: the value that many places from the right, provided it
 * is an IP address (a proxy always writes one); else the peer.
 */
export function clientAddress(
  peer: string,
  forwardedFor: string | undefined,
  trusted: TrustedProxies,
): string {
  const self = normalize(peer) ?? peer;
  if (forwardedFor === undefined) return self;
  const hops = forwardedFor
    .split(',')
    .map((h) => h.trim())
    .filter((h) => h !== '');
  if (trusted instanceof ProxyList) {
    let client = self;
    if (!trusted.trusts(client)) return client;
    for (let i = hops.length - 1; i >= 0; i--) {
      const a = normalize(hops[i] as string);
      if (a === undefined) break;
      client = a;
      if (!trusted.trusts(a)) break;
    }
    return client;
  }
  if (trusted <= 0) return self;
  // Fewer values than proxies: the request reached an inner proxy directly; its peer is all we know.
  const hop = hops.length >= trusted ? hops[hops.length - trusted] : undefined;
  return (hop !== undefined ? normalize(hop) : undefined) ?? self;
}

/** An address in its canonical spelling (IPv4-mapped IPv6 as IPv4), or undefined when it is not one. */
function normalize(address: string): string | undefined {
  try {
    return ipaddr.process(address).toString();
  } catch {
    return undefined;
  }
}

/** What rates and quotas count by: an IPv4 address itself, an IPv6 address's /64, anything else as given. */
export function addressKey(address: string): string {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.process(address);
  } catch {
    return address.slice(0, 100);
  }
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const parts = (parsed as ipaddr.IPv6).parts.slice(0, 4);
  return `${ipaddr.fromByteArray([...parts.flatMap((p) => [p >> 8, p & 0xff]), ...new Array(8).fill(0)]).toString()}/64`;
}
