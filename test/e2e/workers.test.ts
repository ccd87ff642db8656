/**
 * Plans on many machines, end to end: a throwaway PostgreSQL database per test, loopback OpenAI-compatible servers,
 * and worker processes of the built CLI, killed with real signals. A plan run by three workers equals `plan run`
 * byte for byte; a worker killed with SIGKILL mid-job loses nothing and its takeover re-asks only what was in
 * flight; `plan status` during the run; SIGTERM releases a worker's jobs at once; a server off the platform's
 * allow-list is never asked; the database holds no API key. The queue finishes what it starts (#46): `plan retry`
 * always ends a cell; a worker frozen with SIGSTOP and continued never asks what another answers; SIGTERM during a
 * hung request exits at once; the operator's messages (a database away past --db-wait, a full server, an export
 * folder not empty or not writable, a failing cell's rate) are one line each.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { resolvedHostProblem } from '../../src/data/public-address.js';
import { createLogger } from '../../src/log.js';
import { openQueue } from '../../src/workers/store.js';
import { enqueuePlan, queuedCells } from '../../src/workers/submit.js';
import { rumedbench, rumedbenchOk } from '../helpers/cli.js';
import { CLI } from '../helpers/data.js';
import { freshDatabase, NO_PG_REASON, PG_URL } from '../helpers/engines.js';
import { type ChatRequestBody, type FakeOpenAI, startFakeOpenAI } from '../helpers/fake-openai.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';
import { NO_OWN_PG_REASON, startOwnPostgres } from '../helpers/own-postgres.js';
import { startServe } from '../helpers/server.js';
import { query, startWorker, type WorkerProcess, waitFor } from '../helpers/workers.js';

const DATA = fixtureDataDir();
const servers: FakeOpenAI[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const reply = (body: ChatRequestBody): string => {
  const text = body.messages.map((m) => m.content).join('\n');
  const h = createHash('sha256').update(`${body.model}\n${text}`).digest()[0] as number;
  const last = body.messages.at(-1)?.content ?? '';
  if (/«да» или «нет»/.test(last)) return `Ответ: ${h % 2 ? 'да' : 'нет'}`;
  return `Ответ: ${['entailment', 'contradiction', 'neutral'][h % 3]}`;
};

async function serve(delayMs = 0): Promise<FakeOpenAI> {
  const s = await startFakeOpenAI({ reply, behaviour: () => ({ kind: 'ok', delayMs }) });
  servers.push(s);
  return s;
}

function writePlan(models: string[], extra: string[] = []): string {
  const dir = mkdtempSync(join(tmpdir(), 'rumedbench-wplan-'));
  const file = join(dir, 'plan.yaml');
  writeFileSync(
    file,
    [
      'name: spread',
      'split: test',
      'tasks: [RuMedDaNet, RuMedNLI]',
      `data: ${DATA}`,
      'defaults: {temperature: 0, max_tokens: 64, concurrency: 4, bootstrap: 0}',
      ...extra,
      'models:',
      ...models,
      '',
    ].join('\n'),
  );
  return file;
}

const tmp = () => mkdtempSync(join(tmpdir(), 'rumedbench-wout-'));

const files = (d: string) => readdirSync(join(d, 'predictions')).sort();
function expectSamePredictions(a: string, b: string): void {
  expect(files(a)).toEqual(files(b));
  for (const f of files(a))
    expect(readFileSync(join(a, 'predictions', f), 'utf8')).toBe(
      readFileSync(join(b, 'predictions', f), 'utf8'),
    );
}

/** Waits until worker `name` is declared lost and the plan is done (by the others). */
const lostAndDone = (db: string, name: string) =>
  waitFor(`${name} declared lost and the plan done by another`, async () => {
    const rows = await query<{ status: string; lost: string }>(
      db,
      `SELECT p.status, w.status AS lost FROM rumedbench_runs.plans p, rumedbench_runs.workers w WHERE w.name = $1`,
      [name],
    );
    return rows[0]?.status === 'done' && rows[0]?.lost === 'lost' ? true : undefined;
  });

/**
 * Continues a frozen worker and waits for it to exit 0: the requests the server had seen by then, and its one line
 * saying it was declared lost.
 */
async function wake(frozen: WorkerProcess, s: FakeOpenAI) {
  frozen.child.kill('SIGCONT');
  const requestsAtWake = s.requests.length;
  expect((await frozen.exited).code, frozen.log()).toBe(0);
  const said = frozen
    .log()
    .split('\n')
    .filter((l) => /declared this worker lost/.test(l));
  expect(said, frozen.log()).toHaveLength(1);
  return { said, requestsAtWake };
}

/** Runs `f` while `w` runs, then stops it (SIGTERM). */
async function whileRunning(w: WorkerProcess, f: (w: WorkerProcess) => Promise<void>): Promise<void> {
  try {
    await f(w);
  } finally {
    w.child.kill('SIGTERM');
    await w.exited;
  }
}

/** The plan's one cell is done, its 120 requests answered, each asked at least once. */
async function expectOneCellDone(db: string, id: string, s: FakeOpenAI): Promise<void> {
  expect(new Set(s.requests.map((r) => JSON.stringify(r.body.messages))).size).toBe(120);
  const status = JSON.parse((await rumedbenchOk('plan', 'status', id, '--db', db, '--json')).stdout) as {
    cells: { status: string; requests: { done: number; total: number } }[];
  };
  expect(status.cells.map((c) => [c.status, c.requests.done, c.requests.total])).toEqual([
    ['done', 120, 120],
  ]);
}

/** Requests asked more than once, by the content the server saw. */
const askedTwice = (s: FakeOpenAI) => {
  const seen = new Map<string, number>();
  for (const r of s.requests) {
    const k = `${r.body.model}\n${JSON.stringify(r.body.messages)}`;
    seen.set(k, (seen.get(k) ?? 0) + 1);
  }
  return [...seen.values()].filter((n) => n > 1).length;
};

describe.skipIf(!PG_URL)('workers on PostgreSQL (a throwaway database per test)', () => {
  it('three worker processes run a plan into the same run folders as plan run', async () => {
    const db = await freshDatabase('postgres');
    const a = await serve(2);
    const b = await serve(2);
    const file = writePlan([
      `  - {name: model-a, provider: openai, base_url: "${a.url}", model: fake-a}`,
      `  - {name: model-b, provider: openai, base_url: "${b.url}", model: fake-b, shots: 2}`,
    ]);
    const submitted = await rumedbenchOk('plan', 'submit', file, '--db', db, '--job-size', '15', '--json');
    const { id, jobs, requests } = JSON.parse(submitted.stdout) as {
      id: string;
      jobs: number;
      requests: number;
    };
    // model-b's 2-shot prompts need RuMedNLI's train file, which the data lack (as the real data do): RuMedDaNet only.
    expect(requests).toBe(120 + 60);
    expect(jobs).toBe(8 + 4);
    const workers = ['w1', 'w2', 'w3'].map((n) => startWorker(db, n, ['--exit-when-idle']));
    const exits = await Promise.all(workers.map((w) => w.exited));
    expect(exits.map((e) => e.code)).toEqual([0, 0, 0]);
    // Each worker took part.
    const byWorker = await query<{ worker: string; n: number }>(
      db,
      'SELECT worker, count(*)::int AS n FROM rumedbench_runs.answers GROUP BY worker ORDER BY worker',
    );
    expect(byWorker.length).toBeGreaterThanOrEqual(2);
    expect(byWorker.reduce((s, r) => s + r.n, 0)).toBe(180);
    expect(a.requests.length + b.requests.length).toBe(180);

    const status = JSON.parse((await rumedbenchOk('plan', 'status', id, '--db', db, '--json')).stdout) as {
      status: string;
      cells: { cell: string; status: string; requests: { done: number; total: number } }[];
    };
    expect(status.status).toBe('done');
    expect(status.cells.map((c) => [c.cell, c.status, c.requests.done, c.requests.total])).toEqual([
      ['model-a/default', 'done', 120, 120],
      ['model-b/default', 'done', 60, 60],
    ]);

    // Exported, and each finished cell sent to a leaderboard as `plan run --submit` sends it.
    const board = await startServe(['--db', join(tmp(), 'board.sqlite')], { RUMEDBENCH_DATA: DATA });
    const out = tmp();
    try {
      await rumedbenchOk('plan', 'export', id, '--db', db, '--out', out, '--submit', board.url);
      const entries = (
        (await (await fetch(`${board.url}/api/boards/public`)).json()) as { entries: { model: string }[] }
      ).entries;
      expect(entries.map((e) => e.model).sort()).toEqual(['fake-a', 'fake-b']);
    } finally {
      await board.stop();
    }
    const exported = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as {
      cells: { submission?: { status: string } }[];
    };
    expect(exported.cells.map((c) => c.submission?.status)).toEqual(['scored', 'scored']);
    const local = tmp();
    await rumedbenchOk('plan', 'run', file, '--out', local);
    for (const cell of ['model-a/default', 'model-b/default'])
      expectSamePredictions(join(out, cell), join(local, cell));
    const summary = (d: string) =>
      (
        JSON.parse(readFileSync(join(d, 'summary.json'), 'utf8')) as {
          cells: { cell: string; tasks: unknown }[];
        }
      ).cells.map((c) => [c.cell, c.tasks]);
    expect(summary(out)).toEqual(summary(local));
    expect(existsSync(join(out, 'report.html'))).toBe(true);
    // Each exported cell's summary names the exported predictions, not the finishing worker's temporary folder.
    const cellSummary = JSON.parse(readFileSync(join(out, 'model-a/default/summary.json'), 'utf8')) as {
      source: string;
    };
    expect(cellSummary.source).toBe(join(out, 'model-a/default', 'predictions'));
    expect(existsSync(cellSummary.source)).toBe(true);
  });

  it('a worker killed with SIGKILL mid-job: the plan finishes, only its requests in flight are asked again', async () => {
    const db = await freshDatabase('postgres');
    // Slow enough that the victim is still mid-job after the status checks below (a job is about 1.5 s), on a
    // loaded CI machine too.
    const s = await serve(200);
    const file = writePlan([`  - {name: m, provider: openai, base_url: "${s.url}", model: fake-m}`]);
    const id = (await rumedbenchOk('plan', 'submit', file, '--db', db, '--job-size', '30')).stdout.trim();
    const workers = ['k1', 'k2', 'k3'].map((n) =>
      startWorker(db, n, ['--exit-when-idle', '--concurrency', '4']),
    );
    // Wait until a worker holds a job it has answered some of.
    const victim = await waitFor('a worker mid-job', async () => {
      const rows = await query<{ name: string }>(
        db,
        `SELECT w.name FROM rumedbench_runs.claims c JOIN rumedbench_runs.workers w ON w.id = c.worker_id
         JOIN rumedbench_runs.answers a ON a.worker = w.name
         WHERE c.job_id IS NOT NULL GROUP BY w.name HAVING count(*) >= 5 LIMIT 1`,
      );
      return rows[0]?.name;
    });
    // plan status while it runs: requests done, a rate, the workers on the cell.
    const during = JSON.parse((await rumedbenchOk('plan', 'status', id, '--db', db, '--json')).stdout) as {
      status: string;
      cells: { status: string; rate: number; workers: string[]; requests: { done: number; total: number } }[];
    };
    expect(during.status).toBe('running');
    expect(during.cells[0]?.status).toBe('running');
    expect(during.cells[0]?.requests.total).toBe(120);
    expect(during.cells[0]?.requests.done).toBeGreaterThan(0);
    expect(during.cells[0]?.requests.done).toBeLessThan(120);
    expect(during.cells[0]?.rate).toBeGreaterThan(0);
    expect(during.cells[0]?.workers).toContain(victim);
    const human = (await rumedbenchOk('plan', 'status', id, '--db', db)).stdout;
    expect(human).toMatch(/m\/default\s+running\s+\d+\/120/);

    const killed = workers.find((w) => w.name === victim) as WorkerProcess;
    killed.child.kill('SIGKILL');
    expect((await killed.exited).signal).toBe('SIGKILL');
    const others = workers.filter((w) => w !== killed);
    expect((await Promise.all(others.map((w) => w.exited))).map((e) => e.code)).toEqual([0, 0]);
    expect(others.map((w) => w.log()).join('')).toContain(`worker ${victim} is lost`);

    const after = JSON.parse((await rumedbenchOk('plan', 'status', id, '--db', db, '--json')).stdout) as {
      status: string;
    };
    expect(after.status).toBe('done');
    // Nothing written was asked again: at most the killed worker's 4 requests in flight and the 4 answers it may
    // have had on their way to the database (it sends no more while that many are unwritten).
    expect(askedTwice(s)).toBeLessThanOrEqual(8);
    expect(new Set(s.requests.map((r) => JSON.stringify(r.body.messages))).size).toBe(120);
    const out = tmp();
    await rumedbenchOk('plan', 'export', id, '--db', db, '--out', out);
    const local = tmp();
    await rumedbenchOk('plan', 'run', file, '--out', local);
    expectSamePredictions(join(out, 'm/default'), join(local, 'm/default'));
  });

  it('a worker killed holding several jobs it claimed at once: they go back within its lapse, and only its requests in flight are asked again', async () => {
    const db = await freshDatabase('postgres');
    const s = await serve(300);
    const file = writePlan([`  - {name: m, provider: openai, base_url: "${s.url}", model: fake-m}`]);
    const id = (await rumedbenchOk('plan', 'submit', file, '--db', db, '--job-size', '10')).stdout.trim();
    // Four job slots sharing four requests in flight: it claims four jobs in one go, one request each.
    const victim = startWorker(db, 'h1', ['--jobs', '4', '--concurrency', '4']);
    const held = await waitFor('h1 holding four jobs, one request asked', async () => {
      const rows = await query<{ job_id: string; at: Date }>(
        db,
        `SELECT c.job_id, c.at FROM rumedbench_runs.claims c JOIN rumedbench_runs.workers w ON w.id = c.worker_id
         WHERE w.name = 'h1' AND c.job_id IS NOT NULL`,
      );
      return rows.length === 4 && s.requests.length >= 1 ? rows : undefined;
    });
    // Claimed at once: one transaction (its now()) for the four.
    expect(new Set(held.map((r) => r.at.getTime())).size).toBe(1);
    victim.child.kill('SIGKILL');
    expect((await victim.exited).signal).toBe('SIGKILL');
    const killedAt = Date.now();
    const heir = startWorker(db, 'h2', ['--exit-when-idle', '--concurrency', '4']);
    // h1's lapse is 3 s (--heartbeat 1): its jobs are taken by h2 soon after, not after the minute a job taken but
    // never claimed waits.
    await waitFor(
      'h1’s jobs completed by h2',
      async () => {
        const rows = await query<{ n: number }>(
          db,
          `SELECT count(*)::int AS n FROM pgboss.job WHERE id = ANY($1) AND state = 'completed'`,
          [held.map((r) => r.job_id)],
        );
        return rows[0]?.n === 4 ? true : undefined;
      },
      20_000,
    );
    expect(Date.now() - killedAt).toBeLessThan(20_000);
    expect((await heir.exited).code, heir.log()).toBe(0);
    expect(heir.log()).toContain('worker h1 is lost');
    const after = JSON.parse((await rumedbenchOk('plan', 'status', id, '--db', db, '--json')).stdout) as {
      status: string;
    };
    expect(after.status).toBe('done');
    // Four requests in flight and four answers unwritten at most (it sends nothing while as many are unwritten).
    expect(askedTwice(s)).toBeLessThanOrEqual(8);
    expect(new Set(s.requests.map((r) => JSON.stringify(r.body.messages))).size).toBe(120);
  });

  it('a worker killed while it claims jobs (fetched, claims not yet recorded) strands none: they are taken at once, and nothing is asked twice', async () => {
    const db = await freshDatabase('postgres');
    const s = await serve(20);
    const file = writePlan([`  - {name: m, provider: openai, base_url: "${s.url}", model: fake-m}`]);
    const id = (await rumedbenchOk('plan', 'submit', file, '--db', db, '--job-size', '40')).stdout.trim();
    // The attack: the victim's claim rows take 3 s to write, so it is killed between taking its jobs from pg-boss
    // and recording them as its own.
    await query(
      db,
      `CREATE FUNCTION rumedbench_runs.slow_claim() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF NEW.job_id IS NOT NULL AND (SELECT name FROM rumedbench_runs.workers WHERE id = NEW.worker_id) = 'c1' THEN
           PERFORM pg_sleep(3);
         END IF;
         RETURN NEW;
       END $$;
       CREATE TRIGGER slow_claim BEFORE INSERT OR UPDATE ON rumedbench_runs.claims
         FOR EACH ROW EXECUTE FUNCTION rumedbench_runs.slow_claim()`,
    );
    const victim = startWorker(db, 'c1', ['--jobs', '3']);
    await waitFor('c1 between fetching its jobs and recording its claims', async () => {
      const rows = await query<{ n: number }>(
        db,
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'PgSleep'`,
      );
      return rows[0]?.n ? true : undefined;
    });
    // Its machine gone: the process killed, and its connection with it, mid-statement.
    victim.child.kill('SIGKILL');
    await victim.exited;
    await query(
      db,
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'PgSleep'`,
    );
    const killedAt = Date.now();
    const heir = startWorker(db, 'c2', ['--exit-when-idle']);
    expect((await heir.exited).code, heir.log()).toBe(0);
    // Not the minute a job taken but never claimed waits: the victim's jobs were never taken.
    expect(Date.now() - killedAt).toBeLessThan(20_000);
    const after = JSON.parse((await rumedbenchOk('plan', 'status', id, '--db', db, '--json')).stdout) as {
      status: string;
    };
    expect(after.status).toBe('done');
    expect(askedTwice(s)).toBe(0);
    expect(s.requests).toHaveLength(120);
  });

  it('a worker killed while creating its batch is succeeded by one that finds the batch at the provider, never a second', async () => {
    const db = await freshDatabase('postgres');
    // The first creating call makes the batch and is never answered: the worker is killed while it waits.
    const s = await startFakeOpenAI({ reply, createFault: (n) => (n === 0 ? 'hang-after' : undefined) });
    servers.push(s);
    const file = writePlan([
      `  - {name: m, provider: openai, base_url: "${s.url}", model: fake-m, batch: true, batch_poll: 0.05}`,
    ]);
    const id = (await rumedbenchOk('plan', 'submit', file, '--db', db)).stdout.trim();
    const first = startWorker(db, 'k1');
    await waitFor('the creating call', async () => (s.createCalls() >= 1 ? true : undefined));
    first.child.kill('SIGKILL');
    await first.exited;
    const intents = `SELECT outcome FROM rumedbench_runs.batch_intents`;
    expect(await query(db, intents)).toEqual([{ outcome: null }]);
    const second = startWorker(db, 'k2', ['--exit-when-idle']);
    expect((await second.exited).code, second.log()).toBe(0);
    expect(second.log()).toContain(
      'batch batch_1: created by an earlier run that never got the answer; found at the provider, collecting its 120 requests',
    );
    expect([s.uploads(), s.batches().length, s.createCalls(), s.requests.length]).toEqual([1, 1, 1, 0]);
    expect(await query(db, intents)).toEqual([{ outcome: 'batch_1' }]);
    const status = JSON.parse((await rumedbenchOk('plan', 'status', id, '--db', db, '--json')).stdout) as {
      status: string;
    };
    expect(status.status).toBe('done');
  });

  it('a batch cell on workers holds no request slots; a worker killed while its batch waits is succeeded by one that collects it', async () => {
    const db = await freshDatabase('postgres');
    let hold = true;
    const s = await startFakeOpenAI({ reply, holdBatches: () => hold });
    servers.push(s);
    const file = writePlan([
      `  - {name: m, provider: openai, base_url: "${s.url}", model: fake-m, batch: true, batch_poll: 0.05}`,
    ]);
    const id = (await rumedbenchOk('plan', 'submit', file, '--db', db)).stdout.trim();
    const first = startWorker(db, 'b1');
    // The batch is submitted and recorded; the job's claim holds none of the endpoint's request slots.
    const claim = await waitFor('a recorded batch', async () => {
      const rows = await query<{ in_flight: number }>(
        db,
        `SELECT c.in_flight FROM rumedbench_runs.claims c, rumedbench_runs.batches b WHERE c.job_id IS NOT NULL`,
      );
      return rows[0];
    });
    expect(claim.in_flight).toBe(0);
    expect(s.batches()).toHaveLength(1);
    // plan status names the batch and where it stands, as the worker last saw it.
    const waiting = await waitFor('the batch seen in progress', async () => {
      const out = (await rumedbenchOk('plan', 'status', id, '--db', db)).stdout;
      return /batch batch_1, 120 requests: in_progress 0\/120/.test(out) ? out : undefined;
    });
    expect(waiting).toMatch(/m\/default\s+running/);
    first.child.kill('SIGKILL');
    await first.exited;
    hold = false;
    const second = startWorker(db, 'b2', ['--exit-when-idle']);
    expect((await second.exited).code, second.log()).toBe(0);
    expect(second.log()).toContain('submitted by an earlier run; collecting its 120 requests');
    // One upload, one batch in all: nothing was sent twice, nothing online.
    expect([s.uploads(), s.batches().length, s.requests.length]).toEqual([1, 1, 0]);
    const status = JSON.parse((await rumedbenchOk('plan', 'status', id, '--db', db, '--json')).stdout) as {
      status: string;
    };
    expect(status.status).toBe('done');
    expect((status as unknown as { cells: { batches: unknown[] }[] }).cells[0]?.batches).toEqual([
      { id: 'batch_1', requests: 120, status: 'completed', collected: true },
    ]);
    const out = tmp();
    await rumedbenchOk('plan', 'export', id, '--db', db, '--out', out);
    const summary = JSON.parse(readFileSync(join(out, 'm/default', 'summary.json'), 'utf8')) as {
      llm: { batch: { batches: string[]; discount: number } };
    };
    expect(summary.llm.batch).toMatchObject({ batches: ['batch_1'], discount: 0.5 });
    // The same predictions as the cell run online, on this machine.
    const online = await startFakeOpenAI({ reply });
    servers.push(online);
    const local = tmp();
    await rumedbenchOk(
      'plan',
      'run',
      writePlan([`  - {name: m, provider: openai, base_url: "${online.url}", model: fake-m}`]),
      '--out',
      local,
    );
    expectSamePredictions(join(out, 'm/default'), join(local, 'm/default'));
  });

  it('SIGTERM releases the worker’s job to the queue at once; another worker finishes it', async () => {
    const db = await freshDatabase('postgres');
    const s = await serve(100);
    const file = writePlan([`  - {name: m, provider: openai, base_url: "${s.url}", model: fake-m}`]);
    const id = (await rumedbenchOk('plan', 'submit', file, '--db', db, '--job-size', '120')).stdout.trim();
    const first = startWorker(db, 't1', ['--concurrency', '2']);
    const jobId = await waitFor('an answered request', async () => {
      const rows = await query<{ job_id: string }>(
        db,
        `SELECT c.job_id FROM rumedbench_runs.claims c WHERE c.job_id IS NOT NULL
         AND (SELECT count(*) FROM rumedbench_runs.answers) >= 4`,
      );
      return rows[0]?.job_id;
    });
    const t0 = Date.now();
    first.child.kill('SIGTERM');
    const state = await waitFor(
      'the job released',
      async () => {
        const rows = await query<{ state: string }>(db, 'SELECT state::text FROM pgboss.job WHERE id = $1', [
          jobId,
        ]);
        return rows[0]?.state !== 'active' ? rows[0]?.state : undefined;
      },
      5000,
    );
    const releasedMs = Date.now() - t0;
    expect(state).toBe('retry');
    // "At once": well inside one heartbeat, long before a lapse would release it.
    expect(releasedMs).toBeLessThan(1000);
    expect((await first.exited).code).toBe(0);
    expect(first.log()).toContain('1 job(s) released to the queue');
    const asked = s.requests.length;
    expect(asked).toBeLessThan(120);
    const second = startWorker(db, 't2', ['--exit-when-idle', '--concurrency', '8']);
    expect((await second.exited).code).toBe(0);
    expect(askedTwice(s)).toBeLessThanOrEqual(2);
    const status = JSON.parse((await rumedbenchOk('plan', 'status', id, '--db', db, '--json')).stdout) as {
      status: string;
    };
    expect(status.status).toBe('done');
  });

  it('workers on several machines share an endpoint’s in-flight budget (max_in_flight)', async () => {
    const db = await freshDatabase('postgres');
    // A server that counts the requests it holds at once.
    let now = 0;
    let peak = 0;
    let served = 0;
    const server = createServer(async (req, res) => {
      now++;
      peak = Math.max(peak, now);
      let raw = '';
      for await (const c of req) raw += c;
      const body = JSON.parse(raw) as ChatRequestBody;
      await new Promise((r) => setTimeout(r, 25));
      now--;
      served++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: 'x',
          object: 'chat.completion',
          model: body.model,
          choices: [
            { index: 0, message: { role: 'assistant', content: reply(body) }, finish_reason: 'stop' },
          ],
          usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
        }),
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
      const file = writePlan(
        [`  - {name: m, provider: openai, base_url: "${url}", model: fake-m}`],
        ['max_in_flight: 5'],
      );
      await rumedbenchOk('plan', 'submit', file, '--db', db, '--job-size', '10');
      const workers = ['b1', 'b2', 'b3'].map((n) =>
        startWorker(db, n, ['--exit-when-idle', '--jobs', '2', '--concurrency', '4']),
      );
      expect((await Promise.all(workers.map((w) => w.exited))).map((e) => e.code)).toEqual([0, 0, 0]);
      expect(served).toBe(120);
      // Three workers of 4 each could hold 12; the endpoint's budget holds them to 5, and they use it.
      expect(peak).toBeLessThanOrEqual(5);
      expect(peak).toBeGreaterThanOrEqual(4);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('a model server gone for two retry rounds mid-plan: its requests go back to the queue, and every cell ends done', async () => {
    const db = await freshDatabase('postgres');
    let server = await serve(20);
    const port = Number(new URL(server.url).port);
    const file = writePlan(
      [`  - {name: m, provider: openai, base_url: "${server.url}", model: fake-m}`],
      ['retry_rounds: 5', 'retry_delay_s: 1'],
    );
    const id = (await rumedbenchOk('plan', 'submit', file, '--db', db, '--job-size', '30')).stdout.trim();
    const worker = startWorker(db, 'o1', ['--exit-when-idle', '--concurrency', '4']);
    await waitFor('20 answers', async () => (server.requests.length >= 20 ? true : undefined));
    // The server goes away (nothing listens), and comes back on the same port once its requests have gone back to
    // the queue twice (rounds 1 and 2: the worker met the endpoint down again after the first delay).
    const before = server.requests;
    await server.close();
    servers.splice(servers.indexOf(server), 1);
    await waitFor('two rounds back to the queue', async () =>
      /go back to the queue, round 2 of 5/.test(worker.log()) ? true : undefined,
    );
    server = await startFakeOpenAI({ reply, behaviour: () => ({ kind: 'ok', delayMs: 20 }), port });
    servers.push(server);
    expect((await worker.exited).code).toBe(0);
    expect(worker.log()).toMatch(
      /request\(s\) go back to the queue, round 1 of 5, in 1 s \(.* is down: 5 requests in a row/,
    );
    const status = JSON.parse((await rumedbenchOk('plan', 'status', id, '--db', db, '--json')).stdout) as {
      status: string;
      cells: { cell: string; status: string; requests: { done: number; total: number } }[];
    };
    expect(status.status).toBe('done');
    expect(status.cells.map((c) => [c.status, c.requests.done, c.requests.total])).toEqual([
      ['done', 120, 120],
    ]);
    // Asked again: only what was in flight when the server went (4 at most), never an answered request.
    const seenBefore = new Set(before.map((r) => JSON.stringify(r.body.messages)));
    expect(
      server.requests.filter((r) => seenBefore.has(JSON.stringify(r.body.messages))).length,
    ).toBeLessThanOrEqual(4);
  }, 120_000);

  it('plan retry asks a failed cell’s failed requests again, and only those', async () => {
    const db = await freshDatabase('postgres');
    // The first 12 requests get a 500; max_retries 0 and no rounds: the cell fails with them.
    const s = await startFakeOpenAI({ reply, behaviour: (n) => (n < 12 ? { kind: '500' } : { kind: 'ok' }) });
    servers.push(s);
    const file = writePlan(
      [`  - {name: m, provider: openai, base_url: "${s.url}", model: fake-m, max_retries: 0}`],
      ['retry_rounds: 0'],
    );
    const id = (await rumedbenchOk('plan', 'submit', file, '--db', db)).stdout.trim();
    const first = startWorker(db, 'f1', ['--exit-when-idle', '--concurrency', '2']);
    expect((await first.exited).code).toBe(0);
    const failed = JSON.parse((await rumedbenchOk('plan', 'status', id, '--db', db, '--json')).stdout) as {
      status: string;
      cells: { status: string; error: string }[];
    };
    expect(failed.status).toBe('failed');
    expect(failed.cells[0]?.error).toMatch(/12 of 120 requests failed/);
    expect(failed.cells[0]?.error).toContain(`rumedbench plan retry ${id} --cells m/default`);
    expect(failed.cells[0]?.error).not.toMatch(/--retry-errors|journal|rumedbench-cell-/);
    const asked = s.requests.length;
    const unknown = await rumedbench('plan', 'retry', id, '--db', db, '--cells', 'nope');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('has no failed cell "nope"; its failed cells: m/default');
    const retried = await rumedbenchOk('plan', 'retry', id, '--db', db);
    expect(retried.stderr).toContain('m/default: 12 request(s) back in the queue');
    const second = startWorker(db, 'f2', ['--exit-when-idle']);
    expect((await second.exited).code).toBe(0);
    expect(s.requests.length - asked).toBe(12);
    const done = JSON.parse((await rumedbenchOk('plan', 'status', id, '--db', db, '--json')).stdout) as {
      status: string;
      cells: { status: string; requests: { done: number; total: number } }[];
    };
    expect([done.status, done.cells[0]?.status, done.cells[0]?.requests.done]).toEqual(['done', 'done', 120]);
  });

  it('plan retry always ends a cell: one whose retry rounds ran out ends done once its requests are answered', async () => {
    const db = await freshDatabase('postgres');
    // 80 answers, then every connection dropped (the server is down) until the cause is fixed.
    let fixed = false;
    const s = await startFakeOpenAI({
      reply,
      behaviour: (n) => (n >= 80 && !fixed ? { kind: 'drop' } : { kind: 'ok' }),
    });
    servers.push(s);
    const file = writePlan(
      [`  - {name: m, provider: openai, base_url: "${s.url}", model: fake-m, max_retries: 0}`],
      ['retry_rounds: 1', 'retry_delay_s: 0'],
    );
    const submitted = await rumedbenchOk('plan', 'submit', file, '--db', db, '--job-size', '40');
    const id = submitted.stdout.trim();
    // Jobs counted as jobs.
    expect(submitted.stderr).toContain('plan spread: 1 cell(s), 120 requests in 3 job(s) queued');
    const first = startWorker(db, 'r1', ['--exit-when-idle', '--concurrency', '4']);
    expect((await first.exited).code, first.log()).toBe(0);
    // Down in round 0, down again in round 1 (the last): the cell fails, naming plan retry. Each line names the plan.
    expect(first.log()).toContain(
      `${id} m/default: 40 request(s) go back to the queue, round 1 of 1, in 0 s`,
    );
    expect(first.log()).toContain(`${id} m/default #0: 40 of 40 request(s) to ask`);
    const failed = JSON.parse((await rumedbenchOk('plan', 'status', id, '--db', db, '--json')).stdout) as {
      status: string;
      cells: { status: string; error: string; requests: { done: number } }[];
    };
    expect([failed.status, failed.cells[0]?.status, failed.cells[0]?.requests.done]).toEqual([
      'failed',
      'failed',
      80,
    ]);
    expect(failed.cells[0]?.error).toContain(`rumedbench plan retry ${id} --cells m/default`);
    fixed = true;
    const retried = await rumedbenchOk('plan', 'retry', id, '--db', db);
    expect(retried.stderr).toContain('m/default: 40 request(s) back in the queue');
    const asked = s.requests.length;
    const second = startWorker(db, 'r2', ['--exit-when-idle', '--concurrency', '4']);
    const exit = await Promise.race([
      second.exited,
      new Promise<'hung'>((r) => setTimeout(() => r('hung'), 20_000)),
    ]);
    const done = JSON.parse((await rumedbenchOk('plan', 'status', id, '--db', db, '--json')).stdout) as {
      status: string;
      cells: { status: string; requests: { done: number; total: number } }[];
    };
    // The cell ends: done, with every request answered, and the plan with it; the worker has nothing left and exits.
    expect([
      done.status,
      done.cells[0]?.status,
      done.cells[0]?.requests.done,
      done.cells[0]?.requests.total,
    ]).toEqual(['done', 'done', 120, 120]);
    expect(exit === 'hung' ? 'hung' : exit.code, second.log()).toBe(0);
    expect(s.requests.length - asked).toBe(40);
  });

  it('plan retry cuts a cell’s unanswered requests into jobs of the plan’s size: every worker takes a share', async () => {
    const db = await freshDatabase('postgres');
    // 20 answers, then every connection dropped until the cause is fixed; no rounds: the cell fails at once.
    let fixed = false;
    const s = await startFakeOpenAI({
      reply,
      behaviour: (n) => (n >= 20 && !fixed ? { kind: 'drop' } : { kind: 'ok', delayMs: fixed ? 40 : 0 }),
    });
    servers.push(s);
    const file = writePlan(
      [`  - {name: m, provider: openai, base_url: "${s.url}", model: fake-m, max_retries: 0}`],
      ['retry_rounds: 0'],
    );
    const id = (await rumedbenchOk('plan', 'submit', file, '--db', db, '--job-size', '20')).stdout.trim();
    const first = startWorker(db, 'c1', ['--exit-when-idle', '--concurrency', '4', '--jobs', '1']);
    expect((await first.exited).code, first.log()).toBe(0);
    const failed = JSON.parse((await rumedbenchOk('plan', 'status', id, '--db', db, '--json')).stdout) as {
      cells: { status: string; requests: { done: number } }[];
    };
    expect(failed.cells[0]?.status).toBe('failed');
    const left = 120 - (failed.cells[0]?.requests.done ?? 0);
    expect(left).toBeGreaterThan(60);
    fixed = true;
    const retried = await rumedbenchOk('plan', 'retry', id, '--db', db);
    // Before: one job of the whole cell's failures, which one worker took while the others idled.
    expect(retried.stderr).toContain(
      `m/default: ${left} request(s) back in the queue in ${Math.ceil(left / 20)} job(s)`,
    );
    const asked = s.requests.length;
    const workers = ['c2', 'c3'].map((n) =>
      startWorker(db, n, ['--exit-when-idle', '--concurrency', '2', '--jobs', '1']),
    );
    for (const w of workers) expect((await w.exited).code, w.log()).toBe(0);
    const done = JSON.parse((await rumedbenchOk('plan', 'status', id, '--db', db, '--json')).stdout) as {
      status: string;
      cells: { status: string; requests: { done: number } }[];
    };
    expect([done.status, done.cells[0]?.status, done.cells[0]?.requests.done]).toEqual(['done', 'done', 120]);
    expect(s.requests.length - asked).toBe(left);
    // Each worker asked some of them, in jobs of at most 20.
    for (const w of workers) {
      const jobs = [...w.log().matchAll(/m\/default #\d+: (\d+) of (\d+) request\(s\) to ask/g)];
      expect(jobs.length, w.log()).toBeGreaterThan(0);
      for (const j of jobs) expect(Number(j[2])).toBeLessThanOrEqual(20);
    }
  }, 120_000);

  it('plan retry just after an outage: a worker whose breaker is still open tries the server before failing the jobs', async () => {
    const db = await freshDatabase('postgres');
    // 20 answers, then every connection dropped until the cause is fixed; no rounds: the cell fails at once.
    let fixed = false;
    const s = await startFakeOpenAI({
      reply,
      behaviour: (n) => (n >= 20 && !fixed ? { kind: 'drop' } : { kind: 'ok' }),
    });
    servers.push(s);
    const file = writePlan(
      [`  - {name: m, provider: openai, base_url: "${s.url}", model: fake-m, max_retries: 0}`],
      ['retry_rounds: 0'],
    );
    const id = (await rumedbenchOk('plan', 'submit', file, '--db', db, '--job-size', '20')).stdout.trim();
    // A worker that stays up: its breaker for the server opened when the server went, and is still open (5 s).
    const w = startWorker(db, 'b1', ['--concurrency', '4', '--jobs', '1']);
    const status = async () =>
      JSON.parse((await rumedbenchOk('plan', 'status', id, '--db', db, '--json')).stdout) as {
        status: string;
        cells: { status: string; requests: { done: number } }[];
      };
    await waitFor('the cell failed', async () =>
      (await status()).cells[0]?.status === 'failed' ? true : undefined,
    );
    fixed = true;
    const asked = s.requests.length;
    const left = 120 - ((await status()).cells[0]?.requests.done ?? 0);
    await rumedbenchOk('plan', 'retry', id, '--db', db);
    // Before: the retried jobs failed in the same second without a request sent ("… is down"), the cell failed again.
    const done = await waitFor('the retried cell ended', async () => {
      const st = await status();
      return st.cells[0]?.status === 'done' || st.cells[0]?.status === 'failed' ? st : undefined;
    });
    expect([done.status, done.cells[0]?.status, done.cells[0]?.requests.done], w.log()).toEqual([
      'done',
      'done',
      120,
    ]);
    expect(s.requests.length - asked).toBe(left);
  }, 120_000);

  it('a worker frozen with SIGSTOP past its lapse, then continued: it stops its job, says so once, registers again, and never asks what another answers', async () => {
    const db = await freshDatabase('postgres');
    const s = await serve(50);
    const file = writePlan([`  - {name: m, provider: openai, base_url: "${s.url}", model: fake-m}`]);
    const id = (await rumedbenchOk('plan', 'submit', file, '--db', db, '--job-size', '30')).stdout.trim();
    // --heartbeat 1: lost after 3 s without a beat (the operator's 76 s, shortened).
    const frozen = startWorker(db, 'z1', ['--exit-when-idle', '--concurrency', '4']);
    await waitFor('z1 mid-job', async () => {
      const rows = await query<{ job_id: string }>(
        db,
        `SELECT c.job_id FROM rumedbench_runs.claims c JOIN rumedbench_runs.workers w ON w.id = c.worker_id
         WHERE w.name = 'z1' AND c.job_id IS NOT NULL AND (SELECT count(*) FROM rumedbench_runs.answers) >= 4`,
      );
      return rows[0]?.job_id;
    });
    frozen.child.kill('SIGSTOP');
    const requestsAtFreeze = s.requests.length;
    await whileRunning(startWorker(db, 'z2', ['--concurrency', '4']), async (other) => {
      // The other worker declares it lost, takes its job over and answers the whole plan.
      await lostAndDone(db, 'z1');
      expect(other.log()).toContain('worker z1 is lost');
      // Our connections say what they are (the test's own client aside).
      const apps = await query<{ application_name: string }>(
        db,
        `SELECT DISTINCT application_name FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
      );
      expect(apps.map((a) => a.application_name)).toEqual(['rumedbench-worker']);
      const { said, requestsAtWake } = await wake(frozen, s);
      // Said once, in one line, with what happens next.
      expect(said[0]).toMatch(
        /^\S+Z warning: worker z1: .*its 1 job\(s\) went back to the queue .* registering again$/,
      );
      // Registered again: it ended as a worker that stopped, not as a lost one.
      const rows = await query<{ status: string }>(
        db,
        `SELECT status FROM rumedbench_runs.workers WHERE name = 'z1'`,
      );
      expect(rows.map((r) => r.status)).toEqual(['stopped']);
      // Every request was answered by then: whatever reached the model after it woke was asked before. Nothing new
      // went out; only the requests it had in flight when frozen (4 at most) may land late.
      expect(s.requests.length - requestsAtWake).toBeLessThanOrEqual(4);
      // In all, only what was in flight or unwritten at the freeze (4 + 4) was asked twice.
      expect(askedTwice(s)).toBeLessThanOrEqual(8);
      expect(requestsAtFreeze).toBeGreaterThan(0);
      await expectOneCellDone(db, id, s);
    });
  });

  it('a worker frozen holding several jobs claimed at once, then continued: it stops them all, and never asks what another answers', async () => {
    const db = await freshDatabase('postgres');
    const s = await serve(50);
    const file = writePlan([`  - {name: m, provider: openai, base_url: "${s.url}", model: fake-m}`]);
    const id = (await rumedbenchOk('plan', 'submit', file, '--db', db, '--job-size', '20')).stdout.trim();
    const frozen = startWorker(db, 'f1', ['--exit-when-idle', '--jobs', '3', '--concurrency', '3']);
    await waitFor('f1 holding three jobs, some answered', async () => {
      const rows = await query<{ n: number }>(
        db,
        `SELECT count(*)::int AS n FROM rumedbench_runs.claims c JOIN rumedbench_runs.workers w ON w.id = c.worker_id
         WHERE w.name = 'f1' AND c.job_id IS NOT NULL AND (SELECT count(*) FROM rumedbench_runs.answers) >= 4`,
      );
      return rows[0]?.n === 3 ? true : undefined;
    });
    frozen.child.kill('SIGSTOP');
    await whileRunning(startWorker(db, 'f2', ['--concurrency', '4']), async () => {
      await lostAndDone(db, 'f1');
      const { said, requestsAtWake } = await wake(frozen, s);
      expect(said[0]).toMatch(/its 3 job\(s\) went back to the queue/);
      // Nothing new went out after it woke: only its 3 requests in flight (its --concurrency, shared by its three
      // jobs) may land late; in all, only those and its 3 answers unwritten at the freeze were asked twice.
      expect(s.requests.length - requestsAtWake).toBeLessThanOrEqual(3);
      expect(askedTwice(s)).toBeLessThanOrEqual(6);
      await expectOneCellDone(db, id, s);
    });
  });

  it('max_in_flight holds while a frozen worker’s requests are still at the model server; a killed worker’s free its share at once', async () => {
    // A plan with a budget of 4 whose first four requests take 8 s (the first worker's, still held by the server
    // when it is declared lost, 3 s without a beat), every later one 20 ms; its first worker holding those four.
    const slowStart = async (name: string, args: string[]) => {
      const db = await freshDatabase('postgres');
      const s = await startFakeOpenAI({
        reply,
        behaviour: (n) => ({ kind: 'ok', delayMs: n < 4 ? 8000 : 20 }),
      });
      servers.push(s);
      const file = writePlan(
        [`  - {name: m, provider: openai, base_url: "${s.url}", model: fake-m, timeout_ms: 9000}`],
        ['max_in_flight: 4'],
      );
      const id = (await rumedbenchOk('plan', 'submit', file, '--db', db, '--job-size', '30')).stdout.trim();
      const first = startWorker(db, name, ['--concurrency', '4', ...args]);
      await waitFor(`${name} holding 4 requests at the server`, async () =>
        s.requests.length >= 4 ? true : undefined,
      );
      return { db, s, id, first };
    };
    const { db, s, id, first: frozen } = await slowStart('g1', ['--exit-when-idle']);
    frozen.child.kill('SIGSTOP');
    const held = () =>
      query<{ worker: string; in_flight: number }>(
        db,
        `SELECT w.name AS worker, l.in_flight FROM rumedbench_runs.lingering l
         JOIN rumedbench_runs.workers w ON w.id = l.worker_id WHERE l.until > now()`,
      );
    await whileRunning(startWorker(db, 'g2', ['--concurrency', '4']), async (other) => {
      await waitFor('g1 declared lost', async () =>
        other.log().includes('worker g1 is lost') ? true : undefined,
      );
      // Its share stays held: the attacker's view is the server's, which never held more than the budget.
      expect(await held()).toEqual([{ worker: 'g1', in_flight: 4 }]);
      await lostAndDone(db, 'g1');
      expect(s.peak()).toBeLessThanOrEqual(4);
      const { requestsAtWake } = await wake(frozen, s);
      expect(s.requests.length - requestsAtWake).toBe(0);
      // Back, its requests landed: nothing of it is held any more.
      expect(await held()).toEqual([]);
      await expectOneCellDone(db, id, s);
    });

    // The same, killed instead: its sockets closed with it, so nothing lingers and the other worker goes on at once.
    const { db: db2, s: s2, id: id2, first: killed } = await slowStart('k1', []);
    killed.child.kill('SIGKILL');
    await killed.exited;
    await whileRunning(startWorker(db2, 'k2', ['--concurrency', '4']), async (other) => {
      await waitFor('k1 declared lost', async () =>
        other.log().includes('worker k1 is lost') ? true : undefined,
      );
      const rows = await query<{ n: number }>(
        db2,
        `SELECT count(*)::int AS n FROM rumedbench_runs.lingering`,
      );
      expect(rows[0]?.n).toBe(0);
      await lostAndDone(db2, 'k1');
      expect(s2.peak()).toBeLessThanOrEqual(4);
      await expectOneCellDone(db2, id2, s2);
    });
  });

  it('SIGTERM during a request that hangs: the job is released and the process exits at once', async () => {
    const db = await freshDatabase('postgres');
    const s = await serve(60_000);
    const file = writePlan([`  - {name: m, provider: openai, base_url: "${s.url}", model: fake-m}`]);
    await rumedbenchOk('plan', 'submit', file, '--db', db);
    const w = startWorker(db, 'h1', ['--concurrency', '2']);
    await waitFor('two requests hanging', async () => (s.requests.length >= 2 ? true : undefined));
    const t0 = Date.now();
    w.child.kill('SIGTERM');
    const exit = await Promise.race([
      w.exited,
      new Promise<'alive'>((r) => setTimeout(() => r('alive'), 10_000)),
    ]);
    expect(exit === 'alive' ? 'alive after 10 s' : exit.code, w.log()).toBe(0);
    expect(Date.now() - t0).toBeLessThan(6000);
    expect(w.log()).toContain('worker h1: 1 job(s) released to the queue');
    const [job] = await query<{ state: string }>(
      db,
      `SELECT state::text FROM pgboss.job WHERE name LIKE 'rumedbench%'`,
    );
    expect(job?.state).toBe('retry');
  });

  it('plan status: a cell whose requests all fail shows no rate and no time left', async () => {
    const db = await freshDatabase('postgres');
    const s = await startFakeOpenAI({ reply, behaviour: () => ({ kind: '500' }) });
    servers.push(s);
    const file = writePlan(
      [`  - {name: m, provider: openai, base_url: "${s.url}", model: fake-m, max_retries: 0}`],
      ['retry_rounds: 3', 'retry_delay_s: 600'],
    );
    const id = (await rumedbenchOk('plan', 'submit', file, '--db', db)).stdout.trim();
    const w = startWorker(db, 's1', ['--concurrency', '8']);
    try {
      // Every request failed; the cell waits for its next round, in 600 s.
      await waitFor('the failures requeued', async () =>
        /round 1 of 3, in 600 s/.test(w.log()) ? true : undefined,
      );
      const status = JSON.parse((await rumedbenchOk('plan', 'status', id, '--db', db, '--json')).stdout) as {
        cells: {
          status: string;
          requests: { done: number; failed: number };
          rate: number;
          eta_s: number | null;
        }[];
      };
      expect(
        status.cells.map((c) => [c.status, c.requests.done, c.requests.failed, c.rate, c.eta_s]),
      ).toEqual([['running', 0, 120, 0, null]]);
      const human = (await rumedbenchOk('plan', 'status', id, '--db', db)).stdout;
      expect(human).toMatch(/m\/default\s+running\s+0\/120\s+120\s+–\s+–/);
    } finally {
      w.child.kill('SIGTERM');
      await w.exited;
    }
  });

  it('plan export refuses a folder that is not empty unless asked, and says in one line when it cannot write', async () => {
    const db = await freshDatabase('postgres');
    const s = await serve(0);
    const file = writePlan([`  - {name: m, provider: openai, base_url: "${s.url}", model: fake-m}`]);
    const id = (await rumedbenchOk('plan', 'submit', file, '--db', db)).stdout.trim();
    const w = startWorker(db, 'x1', ['--exit-when-idle']);
    expect((await w.exited).code).toBe(0);
    const out = tmp();
    writeFileSync(join(out, 'notes.txt'), 'mine\n');
    const refused = await rumedbench('plan', 'export', id, '--db', db, '--out', out);
    expect([refused.code, refused.stderr.trim()]).toEqual([
      2,
      `error: --out ${out} is not empty (1 entry, e.g. notes.txt): export into an empty or new folder, or pass --overwrite to replace the plan's files there`,
    ]);
    expect(readdirSync(out)).toEqual(['notes.txt']);
    await rumedbenchOk('plan', 'export', id, '--db', db, '--out', out, '--overwrite');
    expect(readdirSync(out).sort()).toEqual(['m', 'notes.txt', 'report.html', 'summary.json']);
    // A folder this user may not write to: one line, exit 2, no stack trace (as root, the export runs as nobody).
    const parent = tmp();
    chmodSync(parent, 0o755);
    const locked = join(parent, 'locked');
    mkdirSync(locked, { mode: 0o555 });
    chmodSync(locked, 0o555);
    const root = process.getuid?.() === 0;
    const r = root
      ? await new Promise<{ code: number | null; stderr: string }>((resolve) => {
          const child = spawn(
            process.execPath,
            [CLI, 'plan', 'export', id, '--db', db, '--out', join(locked, 'x')],
            {
              uid: 65534,
              gid: 65534,
              env: { ...process.env, HOME: parent },
              stdio: ['ignore', 'ignore', 'pipe'],
            },
          );
          let err = '';
          child.stderr?.on('data', (d: Buffer) => {
            err += d.toString();
          });
          child.once('exit', (code) => resolve({ code, stderr: err }));
          // A node that nobody may run (a 0700 folder above it) fails the spawn itself: say so, do not time out.
          child.once('error', (e) =>
            resolve({ code: null, stderr: `cannot run ${process.execPath} as nobody: ${e.message}` }),
          );
        })
      : await rumedbench('plan', 'export', id, '--db', db, '--out', join(locked, 'x'));
    expect([r.code, r.stderr.trim()]).toEqual([
      2,
      expect.stringMatching(
        new RegExp(
          `^error: plan export: cannot write into ${join(locked, 'x')} \\(permission denied: .*\\); choose another --out, or make it writable$`,
        ),
      ),
    ]);
  });

  it('plan status waits for a free connection when the server is full (a role at its connection limit)', async () => {
    const db = await freshDatabase('postgres');
    const role = `rmb_full_${Math.random().toString(36).slice(2, 8)}`;
    const dbName = new URL(db).pathname.slice(1);
    await query(db, `CREATE ROLE ${role} LOGIN`);
    await query(db, `ALTER DATABASE ${dbName} OWNER TO ${role}`);
    const as = new URL(db);
    as.username = role;
    const roleDb = as.toString();
    // Every slot the role may hold, taken (a command needs two or three: its pool and pg-boss's).
    const held = [1, 2, 3].map(() => new pg.Client({ connectionString: roleDb }));
    try {
      const s = await serve(0);
      const file = writePlan([`  - {name: m, provider: openai, base_url: "${s.url}", model: fake-m}`]);
      const id = (await rumedbenchOk('plan', 'submit', file, '--db', roleDb)).stdout.trim();
      await query(db, `ALTER ROLE ${role} CONNECTION LIMIT 3`);
      for (const c of held) await c.connect();
      // The slots are taken for 1.5 s; plan status waits for one instead of failing at once.
      setTimeout(() => void Promise.all(held.map((c) => c.end())), 1500);
      const t0 = Date.now();
      const r = await rumedbench('plan', 'status', id, '--db', roleDb);
      expect([r.code, r.stdout], r.stderr).toEqual([0, expect.stringContaining('m/default')]);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(1000);
      expect(r.stderr.trim().split('\n')).toEqual([
        expect.stringMatching(
          /^warning: rumedbench-cli: the database at postgres:\/\/.* has no free connection \(too many connections for role .*\); waiting for one, up to 30 s$/,
        ),
        expect.stringMatching(/^warning: rumedbench-cli: the database at .* is back after \d+\.\d s$/),
      ]);
    } finally {
      await Promise.all(held.map((c) => c.end().catch(() => {})));
      const admin = new URL(db);
      admin.pathname = '/postgres';
      await query(admin.toString(), `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
      await query(admin.toString(), `DROP ROLE IF EXISTS ${role}`);
    }
  });

  it('a --db that names a database not there, or a wrong password: one line that says what to do', async () => {
    const missing = new URL(PG_URL as string);
    missing.pathname = `/rmb_missing_${Math.random().toString(36).slice(2, 8)}`;
    const r = await rumedbench('worker', '--db', missing.toString(), '--exit-when-idle');
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        /^error: cannot open the queue's database at postgres:\/\/.*\/rmb_missing_\w+: database "rmb_missing_\w+" does not exist; create that database \(createdb NAME, or CREATE DATABASE NAME\) or name an existing one in --db$/,
      ),
    ]);
    const s = await rumedbench('plan', 'status', 'p-000000000000', '--db', missing.toString());
    expect(s.stderr.trim().split('\n')).toEqual([expect.stringMatching(/; create that database/)]);
  });

  it('plan cancel drops the waiting jobs; status names the cell cancelled', async () => {
    const db = await freshDatabase('postgres');
    const s = await serve(0);
    const file = writePlan([`  - {name: m, provider: openai, base_url: "${s.url}", model: fake-m}`]);
    const id = (await rumedbenchOk('plan', 'submit', file, '--db', db)).stdout.trim();
    const r = await rumedbenchOk('plan', 'cancel', id, '--db', db);
    expect(r.stderr).toContain(`plan ${id} cancelled`);
    const w = startWorker(db, 'c1', ['--exit-when-idle']);
    expect((await w.exited).code).toBe(0);
    expect(s.requests.length).toBe(0);
    const status = JSON.parse((await rumedbenchOk('plan', 'status', id, '--db', db, '--json')).stdout) as {
      status: string;
      cells: { status: string; error: string }[];
    };
    expect([status.status, status.cells[0]?.status, status.cells[0]?.error]).toEqual([
      'cancelled',
      'cancelled',
      null,
    ]);
    const missing = await rumedbench('plan', 'status', 'p-000000000000', '--db', db);
    expect([missing.code, missing.stderr]).toEqual([1, expect.stringContaining('no plan p-000000000000')]);
  });

  it('a model error holding NUL and a lone surrogate fails its cell; the worker goes on and the other cell is done', async () => {
    const db = await freshDatabase('postgres');
    const good = await serve(0);
    const poisoned = await startFakeOpenAI({
      reply,
      behaviour: () => ({ kind: '400', message: 'bad \u0000 request \ud800 here' }),
    });
    servers.push(poisoned);
    const file = writePlan([
      `  - {name: poisoned, provider: openai, base_url: "${poisoned.url}", model: fake-p}`,
      `  - {name: good, provider: openai, base_url: "${good.url}", model: fake-g}`,
    ]);
    const { id } = JSON.parse((await rumedbenchOk('plan', 'submit', file, '--db', db, '--json')).stdout) as {
      id: string;
    };
    const w = startWorker(db, 'nul', ['--exit-when-idle']);
    const exit = await w.exited;
    expect(exit.code, w.log()).toBe(0);
    const cells = await query<{ cell_id: string; status: string; error: string | null }>(
      db,
      'SELECT cell_id, status, error FROM rumedbench_runs.cells ORDER BY cell_id',
    );
    expect(cells.map((c) => [c.cell_id, c.status])).toEqual([
      ['good/default', 'done'],
      ['poisoned/default', 'failed'],
    ]);
    expect(cells[1]?.error).toContain('bad \uFFFD request \uFFFD here');
    const status = await rumedbench('plan', 'status', id, '--db', db);
    expect([status.code, status.stdout]).toEqual([0, expect.stringContaining('poisoned/default')]);
  });

  it('a platform evaluation asks only allow-listed servers, and no API key reaches the database', async () => {
    const db = await freshDatabase('postgres');
    const listed = await serve(0);
    const other = await serve(0);
    const secret = 'sk-live-Qw3rTy-not-in-the-database-9f8e7d';
    await rumedbenchOk(
      ...['serve', 'endpoint', 'add', 'listed', '--db', db, '--base-url', listed.url, '--model', 'fake-l'],
      ...['--api-key-env', 'RB_WORKER_KEY', '--allow-private'],
    );
    // Without --allow-private, this machine is refused; the cloud's metadata service is refused in every spelling,
    // with --allow-private or without (src/data/public-address.ts).
    const metadata =
      /^error: --base-url: 169\.254\.169\.254 is the instance metadata service .*never a model server\n$/;
    const local = /--base-url: .* address .*; pass --allow-private/;
    for (const [url, refusal] of [
      ['http://2852039166/v1', metadata],
      ['http://0xA9FEA9FE/v1', metadata],
      [listed.url, local],
      ['http://[::1]:8000/v1', local],
    ] as const) {
      const r = await rumedbench(
        'serve',
        'endpoint',
        'add',
        'x',
        '--db',
        db,
        '--base-url',
        url,
        '--model',
        'x',
      );
      expect([r.code, r.stderr]).toEqual([2, expect.stringMatching(refusal)]);
    }
    const refused = await rumedbench(
      'serve',
      'endpoint',
      'add',
      'bad',
      '--db',
      db,
      '--base-url',
      'file:///etc/passwd',
      '--model',
      'x',
    );
    expect([refused.code, refused.stderr]).toEqual([
      2,
      expect.stringContaining('--base-url: an http:// or https:// URL'),
    ]);
    const list = JSON.parse(
      (await rumedbenchOk('serve', 'endpoint', 'list', '--db', db, '--json')).stdout,
    ) as {
      name: string;
    }[];
    expect(list.map((e) => e.name)).toEqual(['listed']);

    const log = createLogger('silent');
    const queue = await openQueue(db);
    try {
      const good = await queuedCells(
        writePlan([
          `  - {name: listed, provider: openai, base_url: "${listed.url}", model: fake-l, api_key_env: RB_WORKER_KEY}`,
        ]),
        log,
      );
      const bad = await queuedCells(
        writePlan([`  - {name: typed, provider: openai, base_url: "${other.url}", model: fake-o}`]),
        log,
      );
      for (const p of [good, bad])
        await enqueuePlan(queue, {
          name: p.plan.name,
          file: p.plan.file,
          sha256: 'x',
          maxInFlight: 8,
          cells: p.queued,
          jobSize: 200,
          kind: 'evaluation',
        });
    } finally {
      await queue.close();
    }
    const w = startWorker(db, 'e1', ['--exit-when-idle', '--endpoint-keys', 'RB_WORKER_KEY'], {
      RB_WORKER_KEY: secret,
    });
    expect((await w.exited).code).toBe(0);
    expect(listed.requests.length).toBe(120);
    expect(other.requests.length).toBe(0);
    const cells = await query<{ cell_id: string; status: string; error: string | null }>(
      db,
      'SELECT cell_id, status, error FROM rumedbench_runs.cells ORDER BY cell_id',
    );
    expect(cells.map((c) => [c.cell_id, c.status])).toEqual([
      ['listed/default', 'done'],
      ['typed/default', 'failed'],
    ]);
    expect(cells[1]?.error).toContain("is not on the platform's allow-list");
    // A dump of the whole database: the key the worker used is nowhere in it.
    const bin = readdirSync('/usr/lib/postgresql')
      .map((v) => join('/usr/lib/postgresql', v, 'bin', 'pg_dump'))
      .find((p) => existsSync(p));
    expect(bin, 'pg_dump beside the PostgreSQL server').toBeDefined();
    const dump = execFileSync(bin as string, ['--dbname', db], { maxBuffer: 256 << 20 }).toString();
    expect(dump).toContain('RB_WORKER_KEY');
    expect(dump).toContain('rumedbench_runs');
    expect(dump).not.toContain(secret);
  });
});

if (!PG_URL) describe('workers on PostgreSQL', () => it.skip(NO_PG_REASON, () => {}));

describe('serve endpoint add refuses before it opens the database', () => {
  // Nothing listens there: a refusal that opened the database would fail otherwise.
  const db = 'postgres://nobody@127.0.0.1:1/none';
  const add = (...extra: string[]) =>
    rumedbench('serve', 'endpoint', 'add', 'x', '--db', db, '--model', 'm', ...extra);

  it("this machine's own name, by the address it resolves to", async () => {
    const name = hostname();
    const expected = await resolvedHostProblem(name);
    // Here the name resolves to loopback (/etc/hosts); elsewhere to a private address, or to none: all refused.
    expect(expected).toBeDefined();
    const r = await add('--base-url', `http://${name}:8000/v1`);
    expect([r.code, r.stderr]).toEqual([
      2,
      `error: --base-url: ${expected}; pass --allow-private if the model server really is there\n`,
    ]);
  });

  it('a key variable the workers hold for themselves, in one line naming it', async () => {
    const lines: string[] = [];
    for (const variable of ['DATABASE_URL', 'PGPASSWORD', 'AWS_SECRET_ACCESS_KEY', 'RUMEDBENCH_X']) {
      const r = await add('--base-url', 'https://api.example.com/v1', '--api-key-env', variable);
      expect(r.code).toBe(2);
      lines.push(...r.stderr.trim().split('\n'));
    }
    expect(lines).toEqual([
      expect.stringMatching(
        /^error: --api-key-env DATABASE_URL: DATABASE_URL is one of the workers' own variables/,
      ),
      expect.stringMatching(
        /^error: --api-key-env PGPASSWORD: PGPASSWORD is one of the workers' own variables/,
      ),
      expect.stringMatching(
        /^error: --api-key-env AWS_SECRET_ACCESS_KEY: AWS_SECRET_ACCESS_KEY is one of the workers' own variables/,
      ),
      expect.stringMatching(/^error: --api-key-env RUMEDBENCH_X: names one of rumedbench's own secrets/),
    ]);
  });
});

describe.skipIf(!PG_URL)('a worker sends only the keys its operator names (--endpoint-keys)', () => {
  it('a cell whose key variable is not listed fails naming the variable and the flag; the server sees no request', async () => {
    const db = await freshDatabase('postgres');
    const s = await serve(0);
    // A plan's cell, and a platform evaluation of a registered endpoint, both with their key in TEAM_KEY.
    const file = writePlan([
      `  - {name: planned, provider: openai, base_url: "${s.url}", model: fake-p, api_key_env: TEAM_KEY}`,
    ]);
    await rumedbenchOk('plan', 'submit', file, '--db', db);
    await rumedbenchOk(
      ...['serve', 'endpoint', 'add', 'listed', '--db', db, '--base-url', s.url, '--model', 'fake-l'],
      ...['--api-key-env', 'TEAM_KEY', '--allow-private'],
    );
    const queue = await openQueue(db);
    try {
      const p = await queuedCells(
        writePlan([
          `  - {name: listed, provider: openai, base_url: "${s.url}", model: fake-l, api_key_env: TEAM_KEY}`,
        ]),
        createLogger('silent'),
      );
      await enqueuePlan(queue, {
        ...{ name: p.plan.name, file: p.plan.file, sha256: 'x', maxInFlight: 8 },
        ...{ cells: p.queued, jobSize: 200, kind: 'evaluation' },
      });
    } finally {
      await queue.close();
    }
    const w = startWorker(db, 'k1', ['--exit-when-idle', '--endpoint-keys', 'OTHER_KEY'], {
      TEAM_KEY: 'sk-team-secret',
      OTHER_KEY: 'sk-other',
    });
    expect((await w.exited).code).toBe(0);
    expect([s.requests.length, s.completions.length, s.tokenizeCalls()]).toEqual([0, 0, 0]);
    const cells = await query<{ cell_id: string; status: string; error: string }>(
      db,
      'SELECT cell_id, status, error FROM rumedbench_runs.cells ORDER BY cell_id',
    );
    const why =
      "refused: the cell's key is in TEAM_KEY, which this worker does not send (its --endpoint-keys: OTHER_KEY); start the worker with --endpoint-keys TEAM_KEY if that variable holds this model server's key";
    expect(cells).toEqual([
      { cell_id: 'listed/default', status: 'failed', error: why },
      { cell_id: 'planned/default', status: 'failed', error: why },
    ]);
    expect(w.log()).toContain(`listed/default: ${why}`);
  });
});

describe.skipIf(NO_OWN_PG_REASON !== undefined)(
  'a PostgreSQL restart in the middle of a plan (a cluster of the test’s own)',
  () => {
    it('two workers and serve survive pg_ctl restart -m fast: no process exits, every cell ends done, the board answers again', async () => {
      const own = await startOwnPostgres();
      try {
        const db = own.url;
        const s = await serve(100);
        const file = writePlan([
          `  - {name: m, provider: openai, base_url: "${s.url}", model: fake-m}`,
          `  - {name: n, provider: openai, base_url: "${s.url}", model: fake-n}`,
        ]);
        const id = (await rumedbenchOk('plan', 'submit', file, '--db', db, '--job-size', '30')).stdout.trim();
        const board = await startServe(['--db', db], { RUMEDBENCH_DATA: DATA });
        try {
          const workers = ['r1', 'r2'].map((n) =>
            startWorker(db, n, ['--exit-when-idle', '--concurrency', '4']),
          );
          await waitFor('40 answers', async () => {
            const [row] = await query<{ n: number }>(
              db,
              'SELECT count(*)::int AS n FROM rumedbench_runs.answers',
            );
            return (row?.n ?? 0) >= 40 ? true : undefined;
          });
          // The board read once, as a visitor would have before the restart.
          expect((await fetch(`${board.url}/api/boards/public`)).status).toBe(200);
          const t0 = Date.now();
          // As `pg_ctl restart -m fast` on a busy server: every connection cut, 3 s with nothing listening.
          own.down();
          // Meanwhile the board shows its last read, and a write is told to come back.
          const during = await fetch(`${board.url}/api/boards/public`);
          const fd = new FormData();
          // A valid file: every item of the fixture's RuMedDaNet test set, answered "да".
          const items = readFileSync(join(DATA, 'RuMedDaNet', 'test_v1.jsonl'), 'utf8')
            .trim()
            .split('\n');
          const answers = items.map((l) => JSON.stringify({ pairID: JSON.parse(l).pairID, answer: 'да' }));
          fd.append('file', new Blob([`${answers.join('\n')}\n`]), 'RuMedDaNet.jsonl');
          fd.append('model', 'during-outage');
          fd.append('kind', 'LLM');
          const write = await fetch(`${board.url}/api/submissions`, { method: 'POST', body: fd });
          await new Promise((r) => setTimeout(r, Math.max(0, 3000 - (Date.now() - t0))));
          own.up();
          const downMs = Date.now() - t0;
          expect(during.status).toBe(200);
          expect([write.status, write.headers.get('retry-after')], await write.clone().text()).toEqual([
            503,
            '5',
          ]);
          expect(((await write.json()) as { code: string }).code).toBe('DATABASE_UNAVAILABLE');
          // The board answers again once the database is back (its first queries may meet dead pooled connections).
          const status = await waitFor(
            'the board',
            async () => {
              const r = await fetch(`${board.url}/api/boards/public`).catch(() => undefined);
              return r?.status === 200 ? r.status : undefined;
            },
            30_000,
          );
          expect(status).toBe(200);
          const exits = await Promise.all(workers.map((w) => w.exited));
          expect(exits.map((e) => e.code)).toEqual([0, 0]);
          expect(board.child.exitCode).toBeNull();
          const said = workers.map((w) => w.log()).join('\n');
          expect(said).not.toMatch(/internal error/);
          // They waited, said so once, and said when it was back.
          expect(said).toMatch(
            /the database at postgres:\/\/.* is unreachable \(.*\); waiting for it, up to 300 s \(--db-wait\)/,
          );
          expect(said).toMatch(/is back after \d+\.\d s/);
          const plan = JSON.parse(
            (await rumedbenchOk('plan', 'status', id, '--db', db, '--json')).stdout,
          ) as {
            status: string;
            cells: { cell: string; status: string; requests: { done: number; total: number } }[];
          };
          expect(plan.status).toBe('done');
          expect(plan.cells.map((c) => [c.cell, c.status, c.requests.done, c.requests.total])).toEqual([
            ['m/default', 'done', 120, 120],
            ['n/default', 'done', 120, 120],
          ]);
          // Answers that arrived while the database was away were kept and written, not asked again: at most the
          // requests in flight (2 workers × 4) are asked twice.
          const twice = askedTwice(s);
          expect(twice).toBeLessThanOrEqual(8);
          console.log(
            `db outage: down ${downMs} ms; ${s.requests.length} requests for 240 answers, ${twice} asked twice`,
          );
        } finally {
          await board.stop();
        }
      } finally {
        own.stop();
      }
    }, 120_000);

    it('a database away longer than --db-wait: the worker stops with one line that says how many answers were not written', async () => {
      const own = await startOwnPostgres();
      try {
        const db = own.url;
        const s = await serve(100);
        const file = writePlan([`  - {name: m, provider: openai, base_url: "${s.url}", model: fake-m}`]);
        await rumedbenchOk('plan', 'submit', file, '--db', db, '--job-size', '60');
        const w = startWorker(db, 'g1', ['--concurrency', '4', '--db-wait', '2']);
        await waitFor('10 answers', async () => {
          const [row] = await query<{ n: number }>(
            db,
            'SELECT count(*)::int AS n FROM rumedbench_runs.answers',
          );
          return (row?.n ?? 0) >= 10 ? true : undefined;
        });
        own.down();
        const exit = await Promise.race([
          w.exited,
          new Promise<'alive'>((r) => setTimeout(() => r('alive'), 20_000)),
        ]);
        expect(exit === 'alive' ? 'alive after 20 s' : exit.code, w.log()).toBe(1);
        const lines = w.log().trim().split('\n');
        const from = lines.findIndex((l) =>
          /is unreachable .*; waiting for it, up to 2 s \(--db-wait\)$/.test(l),
        );
        expect(from, w.log()).toBeGreaterThan(0);
        // After the outage began: one line, what happened and what to do.
        expect(lines.slice(from + 1), w.log()).toEqual([
          expect.stringMatching(
            /^error: worker g1: the database at postgres:\/\/.* has been unreachable for \d+ s, longer than --db-wait 2 s \(.*\); the worker stopped: \d+ answer\(s\) that arrived could not be written and are asked again by whoever takes their jobs; start it again once the database is back$/,
          ),
        ]);
      } finally {
        own.stop();
      }
    }, 60_000);
  },
);
