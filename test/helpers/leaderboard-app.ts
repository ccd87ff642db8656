/**
 * The leaderboard in process for a route suite: a fresh database on the given engine, the data folder, the admin
 * secret, and Hono's `app.request()`; registered with beforeAll/afterAll in the calling describe.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Hono } from 'hono';
import { afterAll, beforeAll } from 'vitest';
import { createLogger, type Logger } from '../../src/log.js';
import { createApp } from '../../src/server/app.js';
import { Leaderboard } from '../../src/server/leaderboard.js';
import { openLeaderboard } from '../../src/server/serve.js';
import { DEFAULT_LIMITS } from '../../src/server/upload.js';
import { DATA_DIR, PLATFORM_SUBMISSIONS, REFERENCE_PREDICTIONS } from './data.js';
import { type EngineName, freshDatabase } from './engines.js';

export type App = Hono<never>;
export type Body = Record<string, unknown>;

export const ADMIN = 'k3Y-for-the-test-admin-9x7Q2mZ4pL8w';
export const LIMITS = { ...DEFAULT_LIMITS, maxBodyBytes: 2 << 20 };
export const META = { model: 'TF-IDF', kind: 'feature-based' };
/** The route suites read the public data and the reference predictions in ../shared. */
export const ROUTES_READY =
  DATA_DIR !== undefined && REFERENCE_PREDICTIONS !== undefined && PLATFORM_SUBMISSIONS !== undefined;

export const ref = (name: string): string => join(REFERENCE_PREDICTIONS as string, name);
export const files = (dir: string): { name: string; data: Buffer }[] =>
  readdirSync(dir).map((n) => ({ name: n, data: readFileSync(join(dir, n)) }));

export function form(
  fileList: { name: string; data: Uint8Array | string }[],
  fields: Record<string, string> = {},
): FormData {
  const fd = new FormData();
  for (const f of fileList) fd.append('file', new Blob([f.data]), f.name);
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  return fd;
}

interface LeaderboardApp {
  readonly lb: Leaderboard;
  readonly app: App;
  /** The app's logger, and the lines it logged at warn and above. */
  readonly log: Logger;
  readonly logged: string[];
  request(path: string, init?: RequestInit): Promise<Response>;
  upload(
    fileList: { name: string; data: Uint8Array | string }[],
    fields?: Record<string, string>,
    headers?: Record<string, string>,
    on?: App,
  ): Promise<{ res: Response; body: Body }>;
  /** A variant of the service on the same database and workers, with other options. */
  variant(options: Partial<Leaderboard['options']>): Promise<App>;
}

/** `dataDir`: the real data by default; suites about plumbing pass the fixture folder (fixture-data.ts). */
export function useLeaderboardApp(engine: EngineName, dataDir: string = DATA_DIR as string): LeaderboardApp {
  let lb: Leaderboard;
  let app: App;
  const logged: string[] = [];
  const log = createLogger('warn', (l) => logged.push(l));
  beforeAll(async () => {
    lb = await openLeaderboard({
      dataDir,
      db: await freshDatabase(engine),
      threads: 1,
      anonymousPerMinute: 1000,
      // The suites read the boards' API far more often than a client would; the limit's own test sets one.
      apiPerMinute: 0,
      // The suites written before tokens were required on hidden gold upload anonymously; one test checks the refusal.
      closedAnonymous: true,
      limits: LIMITS,
    });
    await lb.admin.ensureAdminSecret(ADMIN);
    app = createApp({ lb, log }) as unknown as App;
  });
  afterAll(async () => {
    await lb?.close();
  });
  return {
    get lb() {
      return lb;
    },
    get app() {
      return app;
    },
    log,
    logged,
    request: (path, init) => Promise.resolve(app.request(path, init)),
    async upload(fileList, fields = META, headers = {}, on = app) {
      const res = await on.request('/api/submissions', {
        method: 'POST',
        body: form(fileList, fields),
        headers,
      });
      return { res, body: (await res.json()) as Body };
    },
    async variant(options) {
      return createApp({
        lb: new Leaderboard(lb.db, lb.scorer, { ...lb.options, ...options }),
        log,
      }) as unknown as App;
    },
  };
}
