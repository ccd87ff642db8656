/**
 * A PostgreSQL cluster of the test's own, which the test may restart (`pg_ctl restart -m fast`) or stop: the shared
 * test database (RUMEDBENCH_TEST_PG_URL) serves every suite at once and is never restarted. Found from the same
 * Debian binaries that .ci/postgres.sh installs; as root, run as the postgres user.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const binDir = (): string | undefined => {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const found = readdirSync(root)
    .map((v) => join(root, v, 'bin'))
    .filter((d) => existsSync(join(d, 'pg_ctl')));
  return found.at(-1);
};

export const PG_BIN = binDir();
/** As root, the cluster runs as the postgres user through runuser (util-linux), wherever PATH leaves out sbin. */
const RUNUSER = ['/usr/sbin/runuser', '/sbin/runuser', '/usr/bin/runuser'].find((p) => existsSync(p));
const ROOT = process.getuid?.() === 0;
export const NO_OWN_PG_REASON = !PG_BIN
  ? 'no PostgreSQL binaries under /usr/lib/postgresql (.ci/run installs them): the database-outage suite is skipped'
  : ROOT && !RUNUSER
    ? 'running as root without runuser, which starts the cluster as the postgres user: the database-outage suite is skipped'
    : undefined;

const freePort = (): Promise<number> =>
  new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

export interface OwnPostgres {
  url: string;
  /** `pg_ctl restart -m fast`: every connection is cut; the server is back when this returns. */
  restart(): void;
  /** `pg_ctl stop -m fast`: every connection cut, nothing listening until `up`. */
  down(): void;
  up(): void;
  stop(): void;
}

export async function startOwnPostgres(): Promise<OwnPostgres> {
  const bin = PG_BIN as string;
  const dir = mkdtempSync(join(tmpdir(), 'rumedbench-ownpg-'));
  const root = ROOT;
  if (root) execFileSync('chown', ['postgres', dir]);
  const run = (tool: string, args: string[]) =>
    execFileSync(
      root ? (RUNUSER as string) : join(bin, tool),
      root ? ['-u', 'postgres', '--', join(bin, tool), ...args] : args,
      {
        stdio: 'ignore',
      },
    );
  const port = await freePort();
  run('initdb', ['-D', join(dir, 'data'), '-U', 'postgres', '-A', 'trust', '--no-sync']);
  const options = `-c listen_addresses=127.0.0.1 -c port=${port} -c fsync=off -c synchronous_commit=off -c unix_socket_directories=${dir} -c max_connections=100`;
  const ctl = (...args: string[]) =>
    run('pg_ctl', ['-D', join(dir, 'data'), '-l', join(dir, 'log'), '-w', ...args]);
  ctl('-o', options, 'start');
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    restart: () => ctl('-m', 'fast', '-o', options, 'restart'),
    down: () => ctl('-m', 'fast', 'stop'),
    up: () => ctl('-o', options, 'start'),
    stop: () => {
      try {
        ctl('-m', 'immediate', 'stop');
      } catch {
        // Already stopped.
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
