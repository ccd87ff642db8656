/**
 * What an orchestrator and an operator ask of a running server: `/healthz` (the process answers: restart it if not),
 * `/readyz` (it can serve: the database answers, its migrations are this release's, the held gold is loaded; send no
 * traffic if not), and `/metrics` (Prometheus text; off unless `serve --metrics-port`): the
 * uploads, the queue's depth, cells by state, requests in flight per endpoint, the workers' heartbeats.
 */
import { Hono } from 'hono';
import { absence } from '../../workers/db-wait.js';
import { migrations } from '../db/migrations.js';
import type { Env, RouteDeps } from '../http.js';
import { ScoringTimes } from '../scorer.js';
import { appliedMigrations, ping, queueFigures, submissionCounts } from './queries.js';

/** How long a readiness check waits for the database: an orchestrator's probe times out in a few seconds. */
const READY_TIMEOUT_MS = 2000;

const within = <T>(p: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([
    p,
    new Promise<T>((_, reject) =>
      setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms).unref(),
    ),
  ]);

export interface ReadyCheck {
  ready: boolean;
  checks: { database: string; migrations: string; gold: string };
}

/** Whether the server can serve, each check in words ("ok" or what is wrong). */
export async function readiness(lb: RouteDeps['lb']): Promise<ReadyCheck> {
  const checks = { database: 'not checked', migrations: 'not checked', gold: 'not checked' };
  try {
    await within(ping(lb.db.db), READY_TIMEOUT_MS, 'the database');
    checks.database = 'ok';
  } catch (e) {
    const kind = absence(e);
    // Dropped: said as such (restore it); unreachable (stopped, cut off, no answer in time) otherwise.
    checks.database = `${kind === 'dropped' ? 'missing' : 'unreachable'} (${(e as Error).message.split('\n')[0]})`;
    return { ready: false, checks };
  }
  try {
    const applied = await appliedMigrations(lb.db.db);
    const missing = Object.keys(migrations).filter((m) => !applied.has(m));
    checks.migrations =
      missing.length === 0
        ? 'ok'
        : `${missing.length} not applied (${missing[0]}…): restart serve to migrate`;
  } catch (e) {
    // No migrations table: the database was created again empty; serve migrates it at its importer's next tick.
    checks.migrations =
      absence(e) === 'empty'
        ? `missing (${(e as Error).message.split('\n')[0]}): the database has no rumedbench tables; serve migrates it within seconds`
        : `unreadable (${(e as Error).message.split('\n')[0]}): restart serve to migrate`;
  }
  try {
    await within(lb.gold.sync(), READY_TIMEOUT_MS, 'the held gold');
    checks.gold = 'ok';
  } catch (e) {
    checks.gold = `not loaded (${(e as Error).message.split('\n')[0]})`;
  }
  return { ready: Object.values(checks).every((c) => c === 'ok'), checks };
}

/** A Prometheus text exposition line's label value, escaped (backslash, quote, newline). */
const label = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

/** The metrics, in the Prometheus text format (version 0.0.4). */
export async function metricsText(lb: RouteDeps['lb']): Promise<string> {
  const out: string[] = [];
  const gauge = (name: string, help: string, rows: [Record<string, string>, number][]) => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`);
    for (const [labels, v] of rows) {
      const l = Object.entries(labels).map(([k, x]) => `${k}="${label(x)}"`);
      out.push(`${name}${l.length > 0 ? `{${l.join(',')}}` : ''} ${v}`);
    }
  };
  const ready = await readiness(lb);
  gauge('rumedbench_ready', 'Whether /readyz says ready (database, migrations, held gold).', [
    [{}, ready.ready ? 1 : 0],
  ]);

  // Counted in this process, so it is there with the database away too.
  const t = lb.scorer.scoring;
  out.push(
    '# HELP rumedbench_scoring_seconds Seconds a submission took to score in this server process (uploads and re-scores; waiting for a scoring thread included).',
    '# TYPE rumedbench_scoring_seconds histogram',
    ...ScoringTimes.BOUNDS.map((b, i) => `rumedbench_scoring_seconds_bucket{le="${b}"} ${t.counts[i]}`),
    `rumedbench_scoring_seconds_bucket{le="+Inf"} ${t.count}`,
    `rumedbench_scoring_seconds_sum ${t.sum}`,
    `rumedbench_scoring_seconds_count ${t.count}`,
  );
  if (ready.checks.database !== 'ok') return `${out.join('\n')}\n`;
  const uploads = await submissionCounts(lb.db.db);
  gauge(
    'rumedbench_submissions',
    'Submissions stored, by board and status.',
    uploads.map((r) => [{ board: r.board, status: r.status }, Number(r.n)]),
  );
  const queue = lb.runs.queue;
  if (queue) {
    const f = await queueFigures(queue);
    gauge(
      'rumedbench_queue_cells',
      'Queued cells, by state.',
      f.cells.map((r) => [{ state: r.status }, r.n]),
    );
    gauge(
      'rumedbench_queue_jobs',
      'Jobs in the queue, by pg-boss state (created: waiting).',
      f.jobs.map((r) => [{ state: r.state }, r.n]),
    );
    gauge('rumedbench_queue_depth', 'Jobs waiting to be taken by a worker (pg-boss created or retry).', [
      [{}, f.jobs.filter((r) => r.state === 'created' || r.state === 'retry').reduce((n, r) => n + r.n, 0)],
    ]);
    gauge(
      'rumedbench_endpoint_in_flight',
      "Requests the workers' claims hold of each endpoint's max_in_flight.",
      f.inFlight.map((r) => [{ endpoint: r.endpoint }, r.n]),
    );
    gauge(
      'rumedbench_worker_heartbeat_age_seconds',
      "Seconds since each worker's last heartbeat (lost past three beats).",
      f.workers.map((r) => [{ worker: r.name, status: r.status }, Math.round(r.age * 10) / 10]),
    );
  }
  return `${out.join('\n')}\n`;
}

/** `/healthz` and `/readyz`, on the board's port. */
export function healthRoutes(lb: RouteDeps['lb']): Hono<Env> {
  const app = new Hono<Env>();
  app.get('/healthz', (c) => c.json({ ok: true, engine: lb.db.engine }));
  app.get('/readyz', async (c) => {
    const r = await readiness(lb);
    return c.json(r, r.ready ? 200 : 503);
  });
  return app;
}

/** The metrics port's app: `/metrics`, and the two probes. */
export function metricsApp(lb: RouteDeps['lb']): Hono<Env> {
  const app = new Hono<Env>();
  app.route('/', healthRoutes(lb));
  app.get('/metrics', async (c) =>
    c.body(await metricsText(lb), 200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }),
  );
  return app;
}
