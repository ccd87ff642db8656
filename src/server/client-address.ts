/**
 * Who a request is from, for rates, quotas and the sign-in lockout. Behind proxies the client's address is the
 * right-most value of X-Forwarded-For that no trusted proxy wrote: each proxy appends the address it saw, so with N
 * proxies of ours in front the N-th value from the right is the one our outermost proxy saw, and everything left
 * of it is whatever the client sent (nginx's usual `$proxy_add_x_forwarded_for` keeps the client's own header).
 * IPv6 clients are grouped by /64: one subscriber gets a whole /64, so its addresses are one uploader.
 */
import ipaddr from 'ipaddr.js';

/**
 * The client's address: the socket's peer without trusted proxies; else the value `trustedProxies` from the right
 * of X-Forwarded-For, provided it is an IP address (a proxy always writes one); else the peer.
 */
export function clientAddress(
  peer: string,
  forwardedFor: string | undefined,
  trustedProxies: number,
): string {
  if (trustedProxies <= 0 || forwardedFor === undefined) return normalize(peer) ?? peer;
  const hops = forwardedFor
    .split(',')
    .map((h) => h.trim())
    .filter((h) => h !== '');
  // Fewer values than proxies: the request reached an inner proxy directly; its peer is all we know.
  const hop = hops.length >= trustedProxies ? hops[hops.length - trustedProxies] : undefined;
  return (hop !== undefined ? normalize(hop) : undefined) ?? normalize(peer) ?? peer;
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
