/**
 * Who a request is from (issue #57, finding 5): X-Forwarded-For is read only from a trusted proxy's connection, so a
 * client that reaches the server directly is itself, whatever header it forges (attacked over real HTTP: uploads
 * past the per-address limit, admin secrets past the lockout); and the lockout is counted in the database, one count
 * for every server process on it (two services on one SQLite file or one PostgreSQL database, each with its own
 * connections).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENGINES, freshDatabase } from '../../test/helpers/engines.js';
import { fixtureDataDir } from '../../test/helpers/fixture-data.js';
import { createLogger } from '../log.js';
import { clientAddress, hopCountWarning, ProxyList, parseTrustedProxies } from './client-address.js';
import { HttpError } from './errors.js';
import { openLeaderboard, startServer, type TrustedProxies } from './serve.js';

const FIXTURE = fixtureDataDir();
const ADMIN = 'tRusted-proxies-admin-secret-4Kd9Lm2Qx7';

describe('clientAddress with a list of trusted proxies', () => {
  const list = parseTrustedProxies('10.0.0.0/8, 2001:db8:ff::/48,loopback') as ProxyList;
  it('reads the header only from a trusted peer, right to left past every trusted hop', () => {
    expect(list).toBeInstanceOf(ProxyList);
    const cases: [string, string | undefined, string][] = [
      // Directly from the internet: the peer, whatever the header says.
      ['203.0.113.9', '198.51.100.1', '203.0.113.9'],
      ['::ffff:203.0.113.9', '10.0.0.1, 127.0.0.1', '203.0.113.9'],
      // Through our proxy: the right-most value no proxy of ours wrote.
      ['10.1.2.3', '198.51.100.1', '198.51.100.1'],
      ['10.1.2.3', 'forged, 198.51.100.1', '198.51.100.1'],
      ['10.1.2.3', '198.51.100.7, 10.9.9.9, 10.8.8.8', '198.51.100.7'],
      ['::1', '2001:db8:1::5, 2001:db8:ff::1', '2001:db8:1::5'],
      // A value that is not an address where a proxy of ours should have written: the last proxy's.
      ['10.1.2.3', 'garbage', '10.1.2.3'],
      ['10.1.2.3', '198.51.100.7, junk, 10.8.8.8', '10.8.8.8'],
      ['10.1.2.3', undefined, '10.1.2.3'],
    ];
    expect(cases.map(([peer, xff]) => clientAddress(peer, xff, list))).toEqual(cases.map((c) => c[2]));
  });

  it('takes addresses, networks and named sets; refuses anything else by name; warns about a hop count', () => {
    expect(parseTrustedProxies('0')).toBe(0);
    expect(parseTrustedProxies('2')).toBe(2);
    expect((parseTrustedProxies('::ffff:10.0.0.0/104') as ProxyList).trusts('10.200.0.1')).toBe(true);
    expect((parseTrustedProxies('private_ranges') as ProxyList).trusts('192.168.1.1')).toBe(true);
    expect((parseTrustedProxies('192.0.2.1') as ProxyList).trusts('192.0.2.2')).toBe(false);
    expect(() => parseTrustedProxies('10.0.0.0/8,proxy.example')).toThrow(
      '"proxy.example" is not an address, a network (CIDR, e.g. 10.0.0.0/8) or one of loopback, linklocal, uniquelocal, private_ranges',
    );
    expect(hopCountWarning(1)).toMatch(
      /^--trusted-proxies 1: a hop count reads X-Forwarded-For from whoever connects/,
    );
    expect(hopCountWarning(0)).toBeUndefined();
    expect(hopCountWarning(list)).toBeUndefined();
  });
});

describe('a client that reaches the server directly, over real HTTP', () => {
  const attack = async (trustedProxies: TrustedProxies) => {
    const logged: string[] = [];
    const s = await startServer({
      dataDir: FIXTURE,
      db: join(mkdtempSync(join(tmpdir(), 'rumedbench-xff-')), 'board.sqlite'),
      port: 0,
      threads: 1,
      anonymousPerMinute: 3,
      trustedProxies,
      adminToken: ADMIN,
      log: createLogger('warn', (l) => logged.push(l)),
    });
    try {
      const uploads = [];
      for (let i = 0; i < 8; i++) {
        const fd = new FormData();
        fd.append('file', new Blob(['{"pairID": "nope", "answer": "да"}']), 'RuMedDaNet.jsonl');
        fd.append('model', 'm');
        fd.append('kind', 'LLM');
        const res = await fetch(`${s.url}/api/submissions`, {
          method: 'POST',
          body: fd,
          headers: { 'x-forwarded-for': `198.51.100.${i + 1}` },
        });
        await res.arrayBuffer();
        uploads.push(res.status);
      }
      const secrets = [];
      for (let i = 0; i < 7; i++) {
        const res = await fetch(`${s.url}/api/admin/submissions/none/hide`, {
          method: 'POST',
          headers: { authorization: `Bearer wrong-${i}`, 'x-forwarded-for': `192.0.2.${i + 1}` },
        });
        await res.arrayBuffer();
        secrets.push(res.status);
      }
      return { uploads, secrets, logged };
    } finally {
      await s.close();
    }
  };

  it('is itself when its address is not a trusted proxy: a forged header moves neither the upload limit nor the lockout', async () => {
    const r = await attack(parseTrustedProxies('10.0.0.0/8'));
    expect(r.uploads).toEqual([422, 422, 422, 429, 429, 429, 429, 429]);
    expect(r.secrets).toEqual([401, 401, 401, 401, 401, 429, 429]);
    expect(r.logged.filter((l) => l.includes('--trusted-proxies'))).toEqual([]);
  }, 60_000);

  it('with a bare hop count (as before the fix), the forged header wins, which is why start-up warns about it', async () => {
    const r = await attack(1);
    expect(r.uploads).toEqual([422, 422, 422, 422, 422, 422, 422, 422]);
    expect(r.secrets).toEqual([401, 401, 401, 401, 401, 401, 401]);
    expect(
      r.logged.filter((l) => l.includes('a hop count reads X-Forwarded-For from whoever connects')),
    ).toHaveLength(1);
  }, 60_000);

  it('reads the header from a trusted proxy: each client it forwards is counted alone', async () => {
    // This test's client is the proxy: loopback is trusted.
    const r = await attack(parseTrustedProxies('loopback'));
    expect(r.uploads).toEqual([422, 422, 422, 422, 422, 422, 422, 422]);
    expect(r.secrets).toEqual([401, 401, 401, 401, 401, 401, 401]);
  }, 60_000);
});

describe('the admin lockout, counted in the database', () => {
  describe.each(ENGINES)('on %s', (engine) => {
    it('is one count for two services on one database: 5 failures between them lock the address on both', async () => {
      const db = await freshDatabase(engine);
      let now = Date.now();
      const open = () => openLeaderboard({ dataDir: FIXTURE, db, threads: 1, clock: () => now });
      const a = await open();
      const b = await open();
      try {
        await a.admin.ensureAdminSecret(ADMIN);
        const tryOn = async (lb: typeof a, secret: string, address = '203.0.113.50') => {
          try {
            return (await lb.admin.signIn(address, secret)) ? 'ok' : 'wrong';
          } catch (e) {
            return e instanceof HttpError ? `${e.status}` : String(e);
          }
        };
        const seen = [];
        for (const lb of [a, b, a, b, a, b, a]) seen.push(await tryOn(lb, 'wrong'));
        expect(seen).toEqual(['wrong', 'wrong', 'wrong', 'wrong', 'wrong', '429', '429']);
        // Locked out whatever the secret, on both; another address (and another /64) is not.
        expect([await tryOn(a, ADMIN), await tryOn(b, ADMIN), await tryOn(b, ADMIN, '203.0.113.51')]).toEqual(
          ['429', '429', 'ok'],
        );
        // Ten concurrent attempts on the two services compare at most five secrets between them.
        const c = await Promise.all(
          Array.from({ length: 10 }, (_, i) => tryOn(i % 2 ? a : b, 'wrong', '2001:db8:5:6::1')),
        );
        expect(c.filter((x) => x === 'wrong')).toHaveLength(5);
        expect(c.filter((x) => x === '429')).toHaveLength(5);
        // After the window, the address may try again; a right secret clears its count.
        now += 15 * 60_000 + 1;
        expect([await tryOn(b, 'wrong'), await tryOn(a, ADMIN), await tryOn(b, 'wrong')]).toEqual([
          'wrong',
          'ok',
          'wrong',
        ]);
      } finally {
        await a.close();
        await b.close();
      }
    }, 60_000);
  });
});
