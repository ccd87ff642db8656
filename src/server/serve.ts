/**
 * Starting the leaderboard: check the data folder (every board scores against it: without it a file's own gold
 * would be trusted), open and migrate the database, make sure an admin secret exists, start the scoring workers,
 * and serve HTTP until SIGINT or SIGTERM.
 */

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type ServerType, serve } from '@hono/node-server';
import envPaths from 'env-paths';
import { splitPath } from '../data/paths.js';
import { RumedbenchError } from '../errors.js';
import type { Logger } from '../log.js';
import { heldByHost, TASKS } from '../tasks/registry.js';
import { absence, awayInWords } from '../workers/db-wait.js';
import type { QueueDb } from '../workers/store.js';
import { openQueue } from '../workers/store.js';
import { createApp } from './app.js';
import { hopCountWarning, type TrustedProxies } from './client-address.js';
import { type Db, migrateBoard, openDatabase } from './db/connect.js';
import { heldGold } from './gold/service.js';
import { DEFAULT_OPTIONS, Leaderboard, type LeaderboardOptions } from './leaderboard.js';
import { Scorer } from './scorer.js';

export type { TrustedProxies } from './client-address.js';

export interface ServeOptions extends Partial<Omit<LeaderboardOptions, 'dataDir'>> {
  dataDir: string;
  /** An SQLite file or a postgres:// URL. */
  db: string;
  host?: string;
  port?: number;
  threads?: number;
  /** Proxies of yours in front: their addresses and networks, or a hop count (warned about). */
  trustedProxies?: TrustedProxies;
  secureCookies?: boolean;
  /** The address browsers use (`https://board.example.org`): its Host alone is answered, forms come from its origin. */
  publicUrl?: string;
  adminToken?: string;
  /** Serves /metrics (Prometheus text), /healthz and /readyz on this port of 127.0.0.1 (off when undefined). */
  metricsPort?: number;
  /** How often finished platform evaluations are entered into their boards (PostgreSQL only). */
  importEveryMs?: number;
  log: Logger;
}

export const defaultDbFile = (): string =>
  join(envPaths('rumedbench', { suffix: '' }).data, 'leaderboard.sqlite');

/**
 * The data files a server scores against; all must be there. A defined task's split without a file is its host's
 * (ECG2Pathology): its records come with the gold the admin imports.
 */
function checkDataFolder(dataDir: string): void {
  const missing = TASKS.flatMap((t) =>
    (['test', 'private_test'] as const)
      .filter((s) => (t.splits as readonly string[]).includes(s))
      .filter((s) => !heldByHost(t, s))
      .map((s) => splitPath(dataDir, t, s))
      .filter((f) => !existsSync(f)),
  );
  if (missing.length > 0) {
    throw new RumedbenchError(
      'DATA_NOT_FOUND',
      `the leaderboard scores against the data folder, which lacks ${missing.join(', ')}; run \`rumedbench data download\` or give --data`,
    );
  }
}

/**
 * Opens the database and the service (no HTTP): what the admin commands use too. With `queue` (the server), a
 * PostgreSQL database is also opened as the workers' queue, for the evaluations the platform runs.
 */
export async function openLeaderboard(
  options: Pick<ServeOptions, 'dataDir' | 'db' | 'threads'> &
    Partial<LeaderboardOptions> & { queue?: boolean; log?: Logger },
): Promise<Leaderboard> {
  checkDataFolder(options.dataDir);
  let db: Db;
  try {
    db = await openDatabase(options.db);
  } catch (e) {
    if (e instanceof RumedbenchError) throw e;
    throw new RumedbenchError('DATABASE_FAILED', `cannot open the database: ${(e as Error).message}`, {
      cause: e,
    });
  }
  let queue: QueueDb | undefined;
  if (options.queue && db.engine === 'postgres') {
    try {
      queue = await openQueue(options.db);
    } catch (e) {
      await db.close();
      throw e;
    }
  }
  const scorer = new Scorer({
    dataDir: options.dataDir,
    ...(options.threads !== undefined ? { threads: options.threads } : {}),
    heldGold: await heldGold(db.db),
  });
  const { queue: _queue, log, ...rest } = options;
  const lb = new Leaderboard(
    db,
    scorer,
    { ...DEFAULT_OPTIONS, ...rest, dataDir: options.dataDir },
    { ...(queue ? { queue } : {}), ...(log ? { log } : {}) },
  );
  await lb.gold.sync();
  return lb;
}

/**
 * A PostgreSQL database dropped and created again under a running server (#60 item 5): found empty by the importer's
 * tick, it is migrated as at a start (the board's schema, the queue's, an admin secret), the held gold read again,
 * and one line says what went with the old one. Servers and workers doing it at once are ordered by the migrations'
 * own locks; one that finds nothing left to do says nothing.
 */
async function migrateComeBackEmpty(lb: Leaderboard, options: ServeOptions): Promise<void> {
  const { log } = options;
  const ran = await migrateBoard(lb.db.db, lb.db.location);
  const queueVersion = await lb.runs.queue?.migrateIfEmpty();
  const { generated } = await lb.admin.ensureAdminSecret(options.adminToken);
  await lb.gold.sync();
  if (ran > 0 || queueVersion !== undefined)
    log.warn(
      `the database at ${lb.db.location} came back empty (dropped and created again?): migrated (${ran} board migrations${queueVersion !== undefined ? `, queue schema version ${queueVersion}` : ''}); the submissions, boards, held gold, admin token and plans it held are gone${generated ? '; a new admin token follows' : ''}`,
    );
  if (generated) log.info(`  ${generated}`);
}

/** How long a stopping server lets the requests under way end before it closes their connections. */
export const SHUTDOWN_GRACE_MS = 10_000;

export interface RunningServer {
  lb: Leaderboard;
  server: ServerType;
  url: string;
  /** Stops: idle connections at once, requests under way after `graceMs` (default SHUTDOWN_GRACE_MS). */
  close(graceMs?: number): Promise<void>;
}

export async function startServer(options: ServeOptions): Promise<RunningServer> {
  const lb = await openLeaderboard({ ...options, queue: true });
  const { log } = options;
  try {
    const { generated } = await lb.admin.ensureAdminSecret(options.adminToken);
    if (generated) {
      log.info(
        `admin token (shown once; stored only as a hash; set RUMEDBENCH_ADMIN_TOKEN to choose your own):`,
      );
      log.info(`  ${generated}`);
    }
  } catch (e) {
    await lb.close();
    throw e;
  }
  let publicOrigin: URL | undefined;
  if (options.publicUrl !== undefined) {
    try {
      publicOrigin = new URL(options.publicUrl);
      if (publicOrigin.protocol !== 'http:' && publicOrigin.protocol !== 'https:') throw new Error('scheme');
    } catch {
      await lb.close();
      throw new RumedbenchError(
        'USAGE',
        `--public-url: an http:// or https:// URL, not "${options.publicUrl}"`,
      );
    }
  }
  const host = options.host ?? '127.0.0.1';
  // Filled once the port is known. Empty: no check (a public bind without --public-url, warned about below).
  const allowedHosts: string[] = [];
  // On PostgreSQL the leaderboard's database is also the workers' queue: the platform runs evaluations itself.
  const runs = lb.runs;
  let importer: NodeJS.Timeout | undefined;
  if (runs.queue) {
    let busy = false;
    // While the database is away (a restart, a drop), said once when it goes (and when how changes) and once when it
    // is back, not every tick.
    let away: ReturnType<typeof absence>;
    importer = setInterval(() => {
      if (busy) return;
      busy = true;
      runs
        .importFinished()
        .then(() => {
          if (away) log.warn('the database is back: finished runs are imported again');
          away = undefined;
        })
        .catch(async (e: unknown) => {
          const now = absence(e);
          if (!now) return log.warn(`importing finished runs: ${(e as Error).message}`);
          if (now === 'empty') {
            try {
              await migrateComeBackEmpty(lb, options);
              return;
            } catch (m) {
              if (!absence(m))
                return log.error(`migrating the database that came back empty: ${(m as Error).message}`);
            }
          }
          if (now !== away)
            log.warn(`the database ${awayInWords(now)} (${(e as Error).message}); waiting for it`);
          away = now;
        })
        .finally(() => {
          busy = false;
        });
    }, options.importEveryMs ?? 2000);
    importer.unref();
  }
  const app = createApp({
    lb,
    log,
    allowedHosts,
    ...(publicOrigin ? { publicOrigin: publicOrigin.origin } : {}),
    ...(options.trustedProxies !== undefined ? { trustedProxies: options.trustedProxies } : {}),
    ...(options.secureCookies !== undefined ? { secureCookies: options.secureCookies } : {}),
  });
  const server = await new Promise<ServerType>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: host, port: options.port ?? 8080 }, () => resolve(s));
    s.once('error', (e: NodeJS.ErrnoException) =>
      reject(
        e.code === 'EADDRINUSE' || e.code === 'EACCES'
          ? new RumedbenchError(
              'SERVER_CONFIG',
              `cannot listen on ${host}:${options.port ?? 8080}: ${e.code === 'EADDRINUSE' ? 'the port is in use (another server, or an earlier one still running)' : 'not allowed (ports below 1024 need privileges)'}; give another --port`,
              { cause: e },
            )
          : e,
      ),
    );
  }).catch(async (e: unknown) => {
    clearInterval(importer);
    await lb.close();
    throw e;
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const loopback = /^(127\.|localhost$|::1$)/.test(host);
  if (publicOrigin || loopback) {
    allowedHosts.push(`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`);
    if (loopback && host.startsWith('127.')) allowedHosts.push(`${host}:${port}`);
    if (publicOrigin) allowedHosts.push(publicOrigin.host);
  } else {
    log.warn(
      `serving on ${host} without --public-url: the Host header is not checked (give --public-url to guard against DNS rebinding)`,
    );
  }
  const hops = hopCountWarning(options.trustedProxies);
  if (hops) log.warn(hops);
  let metrics: ServerType | undefined;
  const metricsPort = options.metricsPort;
  if (metricsPort !== undefined) {
    const { metricsApp } = await import('./health/routes.js');
    metrics = await new Promise<ServerType>((resolve, reject) => {
      const s = serve({ fetch: metricsApp(lb).fetch, hostname: '127.0.0.1', port: metricsPort }, () =>
        resolve(s),
      );
      s.once('error', (e: Error) =>
        reject(
          new RumedbenchError(
            'SERVER_CONFIG',
            `cannot serve metrics on 127.0.0.1:${options.metricsPort}: ${e.message}; give another --metrics-port`,
          ),
        ),
      );
    }).catch(async (e: unknown) => {
      server.close();
      clearInterval(importer);
      await lb.close();
      throw e;
    });
    const a = metrics.address();
    log.info(
      `metrics on http://127.0.0.1:${typeof a === 'object' && a ? a.port : options.metricsPort}/metrics`,
    );
  }
  // Said last: a supervisor (or a test) that waits for this line finds every port it names already listening.
  log.info(`rumedbench leaderboard on ${url} (${lb.db.engine}: ${lb.db.location})`);
  return {
    lb,
    server,
    url,
    close: async (graceMs = SHUTDOWN_GRACE_MS) => {
      // New connections are refused at once and idle keep-alive ones closed; requests under way get `graceMs` to
      // end, then every connection is cut: a slow upload (100 bytes a second) does not hold a stop for minutes.
      const closed = Promise.all(
        [server, metrics]
          .filter((s): s is ServerType => s !== undefined)
          .map((s) => new Promise<void>((resolve) => s.close(() => resolve()))),
      );
      const http = [server, metrics].filter(
        (s) => s !== undefined,
      ) as unknown as import('node:http').Server[];
      for (const s of http) s.closeIdleConnections?.();
      const cut = setTimeout(() => {
        log.warn(`requests still under way after ${graceMs / 1000} s: their connections are closed`);
        for (const s of http) s.closeAllConnections?.();
      }, graceMs);
      cut.unref();
      await closed;
      clearTimeout(cut);
      clearInterval(importer);
      await lb.close();
    },
  };
}
