/**
 * The `worker` command: runs queued plan jobs (src/workers/worker.ts). Apart from the other queue commands
 * (./queue.ts) because a worker's start is paid by every worker process: it loads only what a worker needs, not the
 * flag tables, reports and plan files of the commands that submit and read plans (#64).
 */
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { median } from '../metrics/quantile.js';
import { DEFAULT_DB_WAIT_S } from '../workers/db-wait.js';
import { parseEndpointKeys } from '../workers/keys.js';
import type { FlagsOf, FlagTable } from './flags.js';
import * as flag from './flags.js';
import { type CliIo, EXIT } from './io.js';
import { dbFlag, withQueue } from './queue-db.js';

export const WORKER_FLAGS = {
  db: dbFlag(),
  jobs: flag.count('--jobs <n>', 'jobs at once (sharing --concurrency)', { min: 1, default: 1 }),
  concurrency: flag.count(
    '--concurrency <n>',
    "requests in flight on this worker, across its jobs (and the most its jobs hold of an endpoint's max_in_flight)",
    {
      min: 1,
      default: 8,
    },
  ),
  name: flag.text('--name <name>', 'how plan status names this worker (default: host-pid)'),
  data: flag.text('--data <dir>', "this machine's data folder, in place of the one the plan names"),
  heartbeat: flag.count('--heartbeat <s>', 'seconds between heartbeats; lost after three missed', {
    min: 1,
    default: 5,
  }),
  exitWhenIdle: flag.on('--exit-when-idle', 'stop once no queued plan has work left'),
  dbWait: flag.count(
    '--db-wait <s>',
    'seconds a database outage (a restart, a failover) is waited out before the worker stops',
    { min: 0, default: DEFAULT_DB_WAIT_S },
  ),
  endpointKeys: flag.custom(
    '--endpoint-keys <names>',
    "comma-separated environment variables whose values this worker may send as model servers' keys and headers (default: none); never its own (DATABASE_URL, PGPASSWORD, AWS_…, GOOGLE_…, AZURE_…, RUMEDBENCH_…) nor one that looks like a secret of the host (*PASSWORD*, *SECRET*, *TOKEN*, *_URL, NODE_OPTIONS, HF_…, …)",
    parseEndpointKeys,
    { default: [] as string[] },
  ),
  allowPrivate: flag.on(
    '--allow-private',
    "may connect to model servers on this machine or a private network (a plan's; an evaluation's only if its endpoint was added with --allow-private), never to a cloud's metadata or platform service; without it, every address is checked at connection",
  ),
  logFormat: flag.choice(
    '--log-format <format>',
    'text: each line after its ISO 8601 time; json: one object a line (time, level, worker, plan, cell, msg)',
    ['text', 'json'],
    { default: 'text' },
  ),
  proxy: flag.proxyFlag(),
} satisfies FlagTable;

/** A stopped worker is gone within this long whatever the database does (its jobs then come back by its lapse). */
const STOP_DEADLINE_MS = 4500;

export async function runWorker(flags: FlagsOf<typeof WORKER_FLAGS>, given: CliIo): Promise<number> {
  const name = flags.name ?? `${hostname()}-${process.pid}`;
  // A worker runs for days: every line says when, or is one JSON object.
  const io: CliIo = {
    ...given,
    log: given.log.as?.(flags.logFormat === 'json' ? 'json' : 'time', { worker: name }) ?? given.log,
  };
  let signalled = false;
  // Before it opens the queue: a worker that could not finish what it takes never takes it.
  (await import('../workers/local-disk.js')).checkWorkerCanWork(
    flags.name ?? `${hostname()}-${process.pid}`,
    {
      dataDir: flags.data === undefined ? undefined : resolve(flags.data),
    },
  );
  // A signal before the worker runs (the database still being waited for at start) ends the process at once.
  const early = () => process.exit(EXIT.ok);
  process.once('SIGTERM', early);
  process.once('SIGINT', early);
  const code = await withQueue(
    flags.db,
    async (db) => {
      // The worker's own module only: a worker's start loads neither plan files (YAML) nor submission.
      const worker = new (await import('../workers/worker.js')).Worker({
        db,
        jobs: flags.jobs,
        concurrency: flags.concurrency,
        heartbeatS: flags.heartbeat,
        exitWhenIdle: flags.exitWhenIdle,
        dbWaitS: flags.dbWait,
        allowPrivate: flags.allowPrivate,
        endpointKeys: flags.endpointKeys,
        log: io.log,
        name,
        ...(flags.data !== undefined ? { dataDir: resolve(flags.data) } : {}),
      });
      process.off('SIGTERM', early);
      process.off('SIGINT', early);
      // The first signal stops the worker: its jobs are handed back, and it is gone within STOP_DEADLINE_MS even
      // if the database does not answer (what it could not hand back returns by the lost-worker rule). A second
      // signal ends it at once.
      const stop = () => {
        if (signalled) {
          io.log.warn(`worker ${worker.name}: second signal, exiting now`);
          process.exit(EXIT.ok);
        }
        signalled = true;
        io.log.info(`worker ${worker.name}: stopping`);
        setTimeout(() => {
          io.log.warn(
            `worker ${worker.name}: the database did not let it stop cleanly within ${STOP_DEADLINE_MS / 1000} s; exiting: its jobs go back to the queue once its heartbeat lapses (${3 * flags.heartbeat} s)`,
          );
          process.exit(EXIT.ok);
        }, STOP_DEADLINE_MS).unref();
        void worker.stop();
      };
      process.on('SIGTERM', stop);
      process.on('SIGINT', stop);
      try {
        await worker.run();
      } finally {
        if (!signalled) {
          process.off('SIGTERM', stop);
          process.off('SIGINT', stop);
        }
      }
      const q = worker.queueMs;
      const middle = median(q);
      const slot = median(worker.slotWaitMs);
      const slots = [...worker.slotWaitMs].sort((x, y) => x - y);
      const p90 = slots[Math.floor(slots.length * 0.9)];
      io.log.info(
        `worker ${worker.name}: stopped after ${worker.answered} request(s) in ${q.length} job(s)${middle === null ? '' : `; queue time per job: median ${middle.toFixed(1)} ms`}${slot === null ? '' : `; wait for a request slot: median ${slot.toFixed(1)} ms, 90th percentile ${(p90 ?? slot).toFixed(1)} ms`}${worker.dropped > 0 ? `; ${worker.dropped} answer(s) arrived too late to be written (asked again by whoever takes their jobs)` : ''}`,
      );
      return EXIT.ok;
    },
    // A worker never migrates the queue under other workers: it stops, saying so, if the versions differ.
    {
      supervise: true,
      migrate: false,
      appName: 'rumedbench-worker',
      log: io.log,
      connectWaitS: flags.dbWait,
      connectWaitFlag: '--db-wait',
    },
  );
  // Stopped by a signal: its jobs are released and its state written. A request of a released job still hanging
  // (a model server that does not answer) would hold the process until its timeout: it ends now.
  if (signalled) setTimeout(() => process.exit(), 200).unref();
  return code;
}
