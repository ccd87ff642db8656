/**
 * The queue's schema: numbered migrations, a version every process checks. A database made by release 0.1.0 (no
 * version table, cells as command lines) is migrated, its old cells refused with a clear reason; a worker meeting a
 * database of another version stops with one line.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { rumedbench } from '../../test/helpers/cli.js';
import { freshDatabase, NO_PG_REASON, PG_URL } from '../../test/helpers/engines.js';
import { CellPlans, failQueuedCell, finishCell } from '../engine/queued.js';
import { createLogger } from '../log.js';
import { cellTempDir } from './local-disk.js';
import { cellStore } from './queue-store.js';
import { jobsOf, MIGRATIONS, openQueue, orderedJobIds, QUEUE_SCHEMA_VERSION, SCHEMA } from './store.js';
import { cutIntoJobs, type QueuedCell } from './submit.js';

async function sql(url: string, text: string, values: unknown[] = []) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await c.query(text, values);
  } finally {
    await c.end();
  }
}

describe('jobsOf: a cell’s requests cut into jobs', () => {
  it('cuts in order into jobs of at most the size; a batch cell (no request slots) stays one job', () => {
    const keys = Array.from({ length: 45 }, (_, i) => `k${i}`);
    const jobs = jobsOf(keys, 20, 4);
    expect(jobs.map((j) => j.length)).toEqual([20, 20, 5]);
    expect(jobs.flat()).toEqual(keys);
    expect(jobsOf(keys, 20, 0)).toEqual([keys]);
    expect(jobsOf(keys.slice(0, 20), 20, 4)).toEqual([keys.slice(0, 20)]);
    // No requests left is still one (empty) job: the cell's worker finishes it.
    expect(jobsOf([], 20, 4)).toEqual([[]]);
  });
});

describe('orderedJobIds: job ids in the order they are made (#64)', () => {
  const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

  it('makes UUIDs (version 7) that sort as they were made, many within one millisecond, each unique', () => {
    const next = orderedJobIds();
    const ids = Array.from({ length: 20_000 }, () => next());
    expect(ids.filter((id) => !UUID_V7.test(id))).toEqual([]);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    // Past the 14 bits after the variant: the counter carries into the digits before it, still in order.
    expect(ids.slice(16_380, 16_390).every((id, i, a) => i === 0 || id > (a[i - 1] as string))).toBe(true);
  });

  it('order a plan’s jobs largest cell first, then the plan’s order, each cell’s chunks in order', () => {
    const keys = (n: number) => Array.from({ length: n }, (_, i) => `k${i}`);
    const cells = [
      { id: 'small', keys: keys(3) },
      { id: 'large', keys: keys(45) },
      { id: 'unplanned', keys: null },
      { id: 'large-too', keys: keys(45) },
    ].map((c) => ({ cell: { id: c.id, inFlight: 4 }, keys: c.keys }) as unknown as QueuedCell);
    const jobs = cutIntoJobs(cells, 20);
    const taken = [...jobs]
      .flatMap(([q, js]) => js.map((j, chunk) => ({ id: j.id, job: `${q.cell.id}#${chunk}` })))
      .sort((a, b) => (a.id < b.id ? -1 : 1))
      .map((j) => j.job);
    expect(taken).toEqual([
      'unplanned#0',
      'large#0',
      'large#1',
      'large#2',
      'large-too#0',
      'large-too#1',
      'large-too#2',
      'small#0',
    ]);
    expect(jobs.get(cells[1] as QueuedCell)?.map((j) => j.part)).toEqual(jobsOf(keys(45), 20, 4));
  });

  it.skipIf(!PG_URL)(
    'sort in PostgreSQL as made, as pg-boss orders a queue’s jobs of one statement',
    async () => {
      const next = orderedJobIds();
      const ids = Array.from({ length: 2_000 }, () => next());
      const shuffled = [...ids].sort(() => Math.random() - 0.5);
      const { rows } = await sql(
        PG_URL as string,
        'SELECT id::text FROM unnest($1::uuid[]) AS id ORDER BY id',
        [shuffled],
      );
      expect(rows.map((r) => r.id)).toEqual(ids);
    },
  );
});

describe.skipIf(!PG_URL)(
  `the queue's schema (PostgreSQL${PG_URL ? '' : `: skipped, ${NO_PG_REASON}`})`,
  () => {
    it('migrates a database made by the previous release; its command-line cells are refused, saying why', async () => {
      const url = await freshDatabase('postgres');
      // What release 0.1.0 made: version 1's tables, no version table, a cell queued as a command line.
      await sql(url, MIGRATIONS[0]?.sql as string);
      await sql(
        url,
        `INSERT INTO ${SCHEMA}.plans (id, name, plan_file, plan_sha256, status, max_in_flight) VALUES ('p-old', 'old', 'plan.yaml', '', 'queued', 8)`,
      );
      await sql(
        url,
        `INSERT INTO ${SCHEMA}.cells (plan_id, cell_id, position, model, provider, axes, settings, argv, endpoint, queue, in_flight, total, data_sha256, status)
       VALUES ('p-old', 'm/default', 0, 'm', 'openai', '{}', '{}', '["llm","--model","m"]', 'openai http://127.0.0.1:9/v1', 'rumedbench_x', 8, 0, '{}', 'queued')`,
      );
      await sql(
        url,
        `INSERT INTO ${SCHEMA}.chunks (plan_id, cell_id, chunk, keys, done) VALUES ('p-old', 'm/default', 0, '[]', true)`,
      );

      // A worker of this release does not migrate under the old workers: it stops, naming both versions.
      const w = await rumedbench('worker', '--db', url, '--exit-when-idle');
      expect(w.code).toBe(1);
      expect(w.stderr.trim().split('\n')).toEqual([
        expect.stringMatching(
          new RegExp(
            `schema version 1, older than this rumedbench .* needs \\(${QUEUE_SCHEMA_VERSION}\\).*plan migrate`,
          ),
        ),
      ]);

      // `plan migrate` brings it to this release's version, keeping what it held.
      expect((await rumedbench('plan', 'migrate', '--db', url)).code).toBe(0);
      const versions = await sql(url, `SELECT version FROM ${SCHEMA}.schema_version ORDER BY version`);
      expect(versions.rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
      const cell = await sql(url, `SELECT argv, spec FROM ${SCHEMA}.cells`);
      expect(cell.rows).toEqual([{ argv: '["llm","--model","m"]', spec: null }]);

      // The old cell is refused by a worker with the reason, never run from its command line.
      const lines: string[] = [];
      const db = await openQueue(url, { migrate: false });
      try {
        // The old cell's job was never in this pg-boss: its finish is asked as a worker asks it, of the engine.
        const log = createLogger('info', (l) => lines.push(l));
        const store = cellStore(db, (text, values) => db.pool.query(text, values), 'p-old', 'm/default');
        await finishCell({
          store,
          plans: new CellPlans({ who: 'worker w1', log }),
          plan: 'p-old',
          cell: 'm/default',
          finisher: 'w1',
          tempDir: cellTempDir,
          failed: (e) => failQueuedCell(store, 'p-old', 'm/default', e, log),
          log,
        });
        const failed = await sql(url, `SELECT status, error FROM ${SCHEMA}.cells`);
        expect(failed.rows[0]).toEqual({
          status: 'failed',
          error: expect.stringContaining('queued by an older rumedbench as a command line'),
        });
      } finally {
        await db.close();
      }
    });

    it('refuses a database of a newer release, and makes an empty one', async () => {
      const url = await freshDatabase('postgres');
      const db = await openQueue(url, { migrate: false });
      await db.close();
      const at = await sql(url, `SELECT max(version) AS v FROM ${SCHEMA}.schema_version`);
      expect(at.rows[0]?.v).toBe(QUEUE_SCHEMA_VERSION);
      await sql(url, `INSERT INTO ${SCHEMA}.schema_version (version, what) VALUES ($1, 'from the future')`, [
        QUEUE_SCHEMA_VERSION + 1,
      ]);
      await expect(openQueue(url)).rejects.toThrow(
        `is at schema version ${QUEUE_SCHEMA_VERSION + 1}, newer than this rumedbench`,
      );
      const s = await rumedbench('plan', 'status', 'p-x', '--db', url);
      expect([s.code, s.stderr]).toEqual([1, expect.stringContaining('upgrade rumedbench on this machine')]);
    });
  },
);
