/** A resolver from a table (host → addresses) for the address guard's tests; any other name is ENOTFOUND. */
import type { Resolve } from '../../src/data/public-address.js';

export const resolver =
  (table: Record<string, string[]>): Resolve =>
  async (host) => {
    const list = table[host];
    if (!list) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
