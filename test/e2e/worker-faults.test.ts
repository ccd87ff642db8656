/**
 * The queue under an operator's faults (#60), end to end: real PostgreSQL (the shared test server, or a cluster of
 * the test's own to stop), real worker processes, real signals, a loopback model server.
 *
 * - Every cell ends: a worker that cannot make its temporary folder refuses at start, before it registers; one that
 *   loses it mid-plan hands the cell back to another worker while it lives, or fails it, named, never `finishing`.
 * - Stops that stop: SIGTERM with the database stopped exits within 5 s, without a stack; a second signal at once.
 * - Capacity given back: `plan cancel` frees its claims at once; its cells read `cancelled`; a worker that stopped
 *   cleanly is never called lost.
 */

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rumedbench, rumedbenchOk } from '../helpers/cli.js';
import { CLI } from '../helpers/data.js';
import { freshDatabase, PG_URL } from '../helpers/engines.js';
import { type ChatRequestBody, type FakeOpenAI, startFakeOpenAI } from '../helpers/fake-openai.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';
import { NO_OWN_PG_REASON, startOwnPostgres } from '../helpers/own-postgres.js';
import { query, startWorker, type WorkerProcess, waitFor } from '../helpers/workers.js';

const DATA = fixtureDataDir();
const servers: FakeOpenAI[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const reply = (body: ChatRequestBody): string => {
  const h = createHash('sha256').update(JSON.stringify(body.messages)).digest()[0] as number;
  return /«да» или «нет»/.test(body.messages.at(-1)?.content ?? '')
    ? `Ответ: ${h % 2 ? 'да' : 'нет'}`
    : `Ответ: ${['entailment', 'contradiction', 'neutral'][h % 3]}`;
};

async function modelServer(delayMs: number): Promise<FakeOpenAI> {
  const s = await startFakeOpenAI({ reply, behaviour: () => ({ kind: 'ok', delayMs }) });
  servers.push(s);
  return s;
}

/** A plan of one cell (RuMedDaNet and RuMedNLI of the fixture: 120 requests) on `s`. */
function onePlan(s: FakeOpenAI, extra: string[] = []): string {
  const file = join(mkdtempSync(join(tmpdir(), 'rumedbench-fplan-')), 'plan.yaml');
  writeFileSync(
    file,
    [
      'name: faults',
      'split: test',
      'tasks: [RuMedDaNet, RuMedNLI]',
      `data: ${DATA}`,
      'defaults: {temperature: 0, max_tokens: 64, concurrency: 4, bootstrap: 0}',
      ...extra,
      'models:',
      `  - {name: m, provider: openai, base_url: "${s.url}", model: fake-m}`,
      '',
    ].join('\n'),
  );
  return file;
}

interface Status {
  status: string;
  cells: { cell: string; status: string; error: string | null; requests: { done: number; total: number } }[];
  workers: unknown[];
}
const status = async (db: string, id: string) =>
  JSON.parse((await rumedbenchOk('plan', 'status', id, '--db', db, '--json')).stdout) as Status;

/** Lines of a stack trace, or an internal error: what an operator must never see. */
const stackLines = (log: string) => log.split('\n').filter((l) => /^\s+at |internal error|Error: /.test(l));

describe.skipIf(!PG_URL)('every cell ends (a worker without a temporary folder)', () => {
  it('refuses at start in one line, before it registers or claims anything: TMPDIR missing, TMPDIR a file, --data missing', async () => {
    const db = await freshDatabase('postgres');
    const s = await modelServer(0);
    await rumedbenchOk('plan', 'submit', onePlan(s), '--db', db);
    const file = join(mkdtempSync(join(tmpdir(), 'rumedbench-f-')), 'a-file');
    writeFileSync(file, 'x');
    const cases: [string[], NodeJS.ProcessEnv, RegExp][] = [
      [
        [],
        { TMPDIR: '/nonexistent/tmp' },
        /cannot take the cell's run folder .*\/nonexistent\/tmp.*set TMPDIR/,
      ],
      [[], { TMPDIR: file }, /a part of the path is a file.*set TMPDIR to a writable folder/],
      [
        ['--data', '/nonexistent/data'],
        {},
        /--data \/nonexistent\/data is not there; give this machine's data folder/,
      ],
    ];
    for (const [args, env, said] of cases) {
      const w = startWorker(db, 'bad', ['--exit-when-idle', ...args], env);
      const exit = await w.exited;
      const lines = w.log().trim().split('\n');
      expect([exit.code, lines.length], w.log()).toEqual([1, 1]);
      expect(lines[0]).toMatch(said);
    }
    expect(await query(db, 'SELECT name FROM rumedbench_runs.workers')).toEqual([]);
    expect(await query(db, 'SELECT id FROM rumedbench_runs.claims')).toEqual([]);
    expect(s.requests.length).toBe(0);
  });

  it('its temporary folder gone mid-plan: the cell is handed back, named, and another worker finishes it while the first lives', async () => {
    const db = await freshDatabase('postgres');
    // 500 ms an answer: the 120 requests take 7.5 s, so that the folder is removed while they are asked even when the
    // second worker's start is slow on a loaded machine (at 50 ms a fast worker had finished before it, #64).
    const s = await modelServer(500);
    // One job for the whole cell: the worker that takes it answers every request and then finishes the cell.
    const id = (
      await rumedbenchOk('plan', 'submit', onePlan(s), '--db', db, '--job-size', '500')
    ).stdout.trim();
    const tmp = mkdtempSync(join(tmpdir(), 'rumedbench-ftmp-'));
    const bad = startWorker(db, 'bad', [], { TMPDIR: tmp });
    await waitFor('the job claimed by bad', async () =>
      (await query(db, 'SELECT id FROM rumedbench_runs.claims')).length > 0 ? true : undefined,
    );
    const good = startWorker(db, 'good');
    await waitFor('good registered', async () =>
      (await query(db, `SELECT id FROM rumedbench_runs.workers WHERE name = 'good'`)).length > 0
        ? true
        : undefined,
    );
    rmSync(tmp, { recursive: true, force: true });
    try {
      const t0 = Date.now();
      const done = await waitFor(
        'the cell done',
        async () => {
          const st = await status(db, id);
          return st.status === 'done' ? st : undefined;
        },
        60_000,
      );
      expect(done.cells.map((c) => [c.status, c.requests.done, c.requests.total, c.error])).toEqual([
        ['done', 120, 120, null],
      ]);
      // The first worker still lives, and said why it handed the cell back, once.
      expect(bad.child.exitCode).toBeNull();
      const said = bad
        .log()
        .split('\n')
        .filter((l) => /handed back/.test(l));
      expect(said, bad.log()).toEqual([
        expect.stringMatching(
          new RegExp(
            `^\\S+Z error: ${id} m/default: cannot finish it here \\(its temporary folder cannot take the cell's run folder \\(a folder on its path is missing: (mkdtemp|open|write) ${tmp}/rumedbench-cell-.*set TMPDIR`,
          ),
        ),
      ]);
      expect(stackLines(bad.log())).toEqual([]);
      console.log(`handed back and finished by another worker ${Date.now() - t0} ms after the folder went`);
    } catch (e) {
      console.log(`bad:\n${bad.log()}\ngood:\n${good.log()}`);
      throw e;
    } finally {
      for (const w of [bad, good]) w.child.kill('SIGTERM');
      await Promise.all([bad.exited, good.exited]);
    }
  }, 90_000);

  it('its temporary folder gone and no other worker: the cell fails within a beat, naming the folder and plan retry; the retry finishes it', async () => {
    const db = await freshDatabase('postgres');
    const s = await modelServer(5);
    const id = (
      await rumedbenchOk('plan', 'submit', onePlan(s), '--db', db, '--job-size', '500')
    ).stdout.trim();
    const tmp = mkdtempSync(join(tmpdir(), 'rumedbench-ftmp-'));
    const bad = startWorker(db, 'alone', [], { TMPDIR: tmp });
    try {
      await waitFor('the job claimed', async () =>
        (await query(db, 'SELECT id FROM rumedbench_runs.claims')).length > 0 ? true : undefined,
      );
      rmSync(tmp, { recursive: true, force: true });
      await waitFor('120 answers', async () => {
        const [r] = await query<{ n: number }>(db, 'SELECT count(*)::int AS n FROM rumedbench_runs.answers');
        return r?.n === 120 ? true : undefined;
      });
      const answeredAt = Date.now();
      const failed = await waitFor(
        'the cell failed',
        async () => {
          const st = await status(db, id);
          return st.cells[0]?.status === 'failed' ? st : undefined;
        },
        20_000,
      );
      expect(Date.now() - answeredAt).toBeLessThan(2000);
      expect(failed.cells[0]?.error).toMatch(
        new RegExp(
          `its temporary folder cannot take the cell's run folder \\(a folder on its path is missing: mkdtemp ${tmp}/.*once it is fixed, finish the cell: rumedbench plan retry ${id} --cells m/default$`,
        ),
      );
      expect(bad.child.exitCode).toBeNull();
    } finally {
      bad.child.kill('SIGTERM');
      await bad.exited;
    }
    await rumedbenchOk('plan', 'retry', id, '--db', db);
    const good = startWorker(db, 'good', ['--exit-when-idle']);
    expect((await good.exited).code).toBe(0);
    expect((await status(db, id)).cells.map((c) => [c.status, c.requests.done])).toEqual([['done', 120]]);
    expect(s.requests.length).toBe(120);
  }, 90_000);
});

describe.skipIf(!PG_URL)('what an operator sees (log lines)', () => {
  it('every worker line starts with its ISO 8601 time; --log-format json: one object a line with time, level, worker, plan, cell', async () => {
    const db = await freshDatabase('postgres');
    const s = await modelServer(0);
    const id = (await rumedbenchOk('plan', 'submit', onePlan(s), '--db', db)).stdout.trim();
    const text = startWorker(db, 't1', ['--exit-when-idle']);
    expect((await text.exited).code).toBe(0);
    const lines = text.log().trim().split('\n');
    expect(lines.length).toBeGreaterThan(2);
    for (const l of lines) expect(l).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \S/);
    await rumedbenchOk('plan', 'submit', onePlan(s), '--db', db);
    const json = startWorker(db, 'j1', ['--exit-when-idle', '--log-format', 'json']);
    expect((await json.exited).code).toBe(0);
    const objects = json
      .log()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, string>);
    for (const o of objects) {
      expect(
        Object.keys(o)
          .filter((k) => ['time', 'level', 'worker', 'msg'].includes(k))
          .sort(),
      ).toEqual(['level', 'msg', 'time', 'worker']);
      expect([o.worker, new Date(o.time as string).toISOString()]).toEqual(['j1', o.time]);
    }
    expect(objects.some((o) => o.cell === 'm/default' && /^p-[0-9a-f]{12}$/.test(o.plan ?? ''))).toBe(true);
    expect(id).toMatch(/^p-/);
  }, 60_000);
});

describe.skipIf(!PG_URL)('capacity given back (plan cancel)', () => {
  it('frees its claims at once; the worker drops the job at its next beat; cells read cancelled; a worker stopped cleanly is never called lost', async () => {
    const db = await freshDatabase('postgres');
    const s = await modelServer(300);
    const id = (
      await rumedbenchOk('plan', 'submit', onePlan(s), '--db', db, '--job-size', '60')
    ).stdout.trim();
    const a = startWorker(db, 'L1', ['--concurrency', '4']);
    const b = startWorker(db, 'L2', ['--concurrency', '4']);
    try {
      await waitFor('both workers holding a job', async () => {
        const rows = await query<{ n: number }>(
          db,
          'SELECT count(DISTINCT worker_id)::int AS n FROM rumedbench_runs.claims',
        );
        return rows[0]?.n === 2 ? true : undefined;
      });
      await rumedbenchOk('plan', 'cancel', id, '--db', db);
      // At once: no claim of the plan left, nothing of the endpoint's budget held.
      expect(await query(db, 'SELECT worker_id FROM rumedbench_runs.claims')).toEqual([]);
      const st = await status(db, id);
      expect([st.status, st.cells.map((c) => c.status), st.workers]).toEqual([
        'cancelled',
        ['cancelled'],
        [],
      ]);
      // Within a beat or two, no more requests.
      await new Promise((r) => setTimeout(r, 2500));
      const asked = s.requests.length;
      await new Promise((r) => setTimeout(r, 1500));
      expect(s.requests.length).toBe(asked);
      // L2 stops cleanly; L1, still running, does not call it lost.
      b.child.kill('SIGTERM');
      expect((await b.exited).code).toBe(0);
      await new Promise((r) => setTimeout(r, 4000));
      expect(a.log()).not.toMatch(/L2 is lost/);
      expect(a.log()).toMatch(/plan cancelled, job dropped/);
      expect(b.log()).not.toMatch(/declared this worker lost/);
    } finally {
      a.child.kill('SIGTERM');
      await a.exited;
    }
  }, 60_000);
});

describe.skipIf(NO_OWN_PG_REASON !== undefined)('stops that stop (the database stopped)', () => {
  const stoppedWithin = async (w: WorkerProcess, ms: number) => {
    const t0 = Date.now();
    w.child.kill('SIGTERM');
    const exit = await Promise.race([
      w.exited,
      new Promise<'alive'>((r) => setTimeout(() => r('alive'), 15_000)),
    ]);
    expect(exit === 'alive' ? 'alive after 15 s' : exit.code, w.log()).toBe(0);
    const took = (exit as { at: number }).at - t0;
    expect(took, w.log()).toBeLessThan(ms);
    expect(stackLines(w.log()), w.log()).toEqual([]);
    return took;
  };

  it('SIGTERM mid-job and idle, with the database stopped: exit 0 within 5 s, one line, no stack; its jobs come back by the lost-worker rule', async () => {
    const own = await startOwnPostgres();
    try {
      const db = own.url;
      const s = await modelServer(200);
      const id = (
        await rumedbenchOk('plan', 'submit', onePlan(s), '--db', db, '--job-size', '60')
      ).stdout.trim();
      const busy = startWorker(db, 'busy', ['--concurrency', '4']);
      const idle = startWorker(db, 'idle', ['--db-wait', '60', '--jobs', '1']);
      await waitFor('10 answers', async () => {
        const [r] = await query<{ n: number }>(db, 'SELECT count(*)::int AS n FROM rumedbench_runs.answers');
        return (r?.n ?? 0) >= 10 ? true : undefined;
      });
      own.down();
      await new Promise((r) => setTimeout(r, 1000));
      const tookBusy = await stoppedWithin(busy, 5000);
      const tookIdle = await stoppedWithin(idle, 5000);
      expect(busy.log()).toMatch(/could not hand back|did not let it stop cleanly/);
      console.log(`SIGTERM with the database stopped: busy ${tookBusy} ms, idle ${tookIdle} ms`);
      // Back up: a new worker takes the jobs over once the stopped ones' heartbeats lapse, and the plan ends.
      own.up();
      const next = startWorker(db, 'next', ['--exit-when-idle']);
      expect((await next.exited).code, next.log()).toBe(0);
      expect((await status(db, id)).cells.map((c) => [c.status, c.requests.done])).toEqual([['done', 120]]);
    } finally {
      own.stop();
    }
  }, 120_000);

  it('a second signal exits at once', async () => {
    const own = await startOwnPostgres();
    try {
      const db = own.url;
      const s = await modelServer(200);
      await rumedbenchOk('plan', 'submit', onePlan(s), '--db', db);
      const w = startWorker(db, 'twice', ['--db-wait', '60']);
      await waitFor('registered', async () =>
        (await query(db, 'SELECT id FROM rumedbench_runs.workers')).length > 0 ? true : undefined,
      );
      own.down();
      w.child.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 300));
      const t0 = Date.now();
      w.child.kill('SIGINT');
      const exit = await w.exited;
      expect([exit.code, exit.at - t0 < 1000], w.log()).toEqual([0, true]);
      expect(stackLines(w.log())).toEqual([]);
    } finally {
      own.stop();
    }
  }, 60_000);
});

/** Drops the database of `url` under its users (their connections cut), or creates it again empty. */
async function adminOn(url: string, what: 'drop' | 'create'): Promise<void> {
  const name = new URL(url).pathname.slice(1);
  await query(
    PG_URL as string,
    what === 'drop' ? `DROP DATABASE ${name} WITH (FORCE)` : `CREATE DATABASE ${name}`,
  );
}

describe.skipIf(!PG_URL)('a database that goes away (dropped, then created again empty)', () => {
  it("two workers mid-plan say the drop in one line, migrate the empty one once between them, drop the vanished plan's jobs, and run a plan submitted to it", async () => {
    const db = await freshDatabase('postgres');
    const s = await modelServer(20);
    const old = (await rumedbenchOk('plan', 'submit', onePlan(s), '--db', db)).stdout.trim();
    const ws = [startWorker(db, 'one'), startWorker(db, 'two')];
    const logs = () => ws.map((w) => w.log()).join('\n');
    try {
      // Both registered before the drop: on a loaded machine worker one can write its answers before worker two has
      // opened the database, and a worker that starts on a missing database stops at once (a wrong --db), which is
      // not what this test is about.
      await waitFor('answers written, both workers registered', async () => {
        const [r] = await query<{ n: number; w: number }>(
          db,
          'SELECT (SELECT count(*)::int FROM rumedbench_runs.answers) AS n, (SELECT count(*)::int FROM rumedbench_runs.workers) AS w',
        );
        return (r?.n ?? 0) > 10 && (r?.w ?? 0) >= 2 ? true : undefined;
      });
      await adminOn(db, 'drop');
      for (const w of ws)
        await waitFor(`the drop said by ${w.name}`, async () =>
          /does not exist \(dropped\?\)/.test(w.log()) ? true : undefined,
        );
      await adminOn(db, 'create');
      // Back empty: migrated by the workers themselves, once (the advisory lock), with no operator's step.
      await waitFor('the empty database migrated', async () =>
        /came back empty/.test(logs()) ? true : undefined,
      );
      const versions = await query<{ version: number }>(
        db,
        `SELECT version FROM rumedbench_runs.schema_version ORDER BY version`,
      );
      expect(versions.map((v) => v.version)).toEqual([...new Set(versions.map((v) => v.version))]);
      const id = (await rumedbenchOk('plan', 'submit', onePlan(s), '--db', db)).stdout.trim();
      const done = await waitFor(
        'the new plan done',
        async () => {
          const st = await status(db, id);
          return st.status === 'done' ? st : undefined;
        },
        60_000,
      );
      expect(done.cells.map((c) => [c.status, c.requests.done, c.requests.total])).toEqual([
        ['done', 120, 120],
      ]);
      // The plan of the old database is gone with it: said as such, not found.
      const gone = await rumedbench('plan', 'status', old, '--db', db);
      expect(gone.code).not.toBe(0);
      for (const w of ws) expect(w.child.exitCode, w.log()).toBeNull();
      const migrated = logs()
        .split('\n')
        .filter((l) => /came back empty/.test(l));
      expect(migrated, logs()).toEqual([
        expect.stringMatching(
          /^\S+Z warning: worker (one|two): the database at postgres:\/\/\S+ came back empty \(dropped and created again\?\): the queue was migrated \(schema version \d+\); the plans it held are gone, and the \d+ job\(s\) this worker had of them are dropped$/,
        ),
      ]);
      for (const w of ws) {
        expect(
          w
            .log()
            .split('\n')
            .filter((l) => /does not exist \(dropped|is back after/.test(l)),
          w.log(),
        ).toEqual([
          expect.stringMatching(
            new RegExp(
              `^\\S+Z warning: worker ${w.name}: the database at postgres://\\S+ does not exist \\(dropped\\?\\) \\(database "\\w+" does not exist\\); waiting for it to be restored, up to 300 s \\(--db-wait\\)$`,
            ),
          ),
          expect.stringMatching(
            new RegExp(`^\\S+Z warning: worker ${w.name}: the database at \\S+ is back after \\d+\\.\\d s$`),
          ),
        ]);
        expect(stackLines(w.log()), w.log()).toEqual([]);
      }
    } finally {
      for (const w of ws) w.child.kill('SIGTERM');
      for (const w of ws) expect((await w.exited).code, logs()).toBe(0);
    }
  }, 120_000);
});

/** `plan status --watch` in its own process (the tests' in-process CLI runs one command at a time), off a terminal. */
function watchPlan(db: string, id: string) {
  const child = spawn(process.execPath, [CLI, 'plan', 'status', id, '--db', db, '--watch'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  return { child, exited, out: () => out };
}

describe.skipIf(!PG_URL)('what an operator sees of a plan under way', () => {
  it('plan status --watch off a terminal prints only changes and exits 0 when done; plan export mid-plan exports the finished cell and names the running one (exit 3), never "failed"', async () => {
    const db = await freshDatabase('postgres');
    const fast = await modelServer(60);
    const slow = await modelServer(120);
    const file = onePlan(fast);
    // A second model: each cell's 120 requests, 4 at a time, take 2 s and more; whichever the worker takes first, the
    // other is still to do for seconds once it is done.
    writeFileSync(
      file,
      `${readFileSync(file, 'utf8')}  - {name: slow, provider: openai, base_url: "${slow.url}", model: fake-s}\n`,
    );
    const id = (await rumedbenchOk('plan', 'submit', file, '--db', db, '--job-size', '500')).stdout.trim();
    const watch = watchPlan(db, id);
    const w = startWorker(db, 'both', ['--jobs', '2']);
    try {
      const mid = await waitFor(
        'one cell done, the other not yet',
        async () => {
          const st = await status(db, id);
          const states = st.cells.map((c) => c.status);
          return states.includes('done') && states.some((x) => x !== 'done') ? st : undefined;
        },
        60_000,
      );
      const [done, other] = mid.cells[0]?.status === 'done' ? mid.cells : [...mid.cells].reverse();
      const out = join(mkdtempSync(join(tmpdir(), 'rumedbench-fexp-')), 'x');
      const exported = await rumedbench('plan', 'export', id, '--db', db, '--out', out, '--json');
      expect(exported.code, exported.stderr).toBe(3);
      const summary = JSON.parse(exported.stdout) as {
        cells: { cell: string; status: string; error?: string }[];
      };
      const byCell = new Map(summary.cells.map((c) => [c.cell, [c.status, c.error]]));
      expect(byCell.get(done?.cell as string)).toEqual(['done', undefined]);
      // Still under way when exported (running, or finishing by now): never failed, no error.
      const [state, error] = byCell.get(other?.cell as string) ?? [];
      expect([['queued', 'running', 'finishing'].includes(state as string), error]).toEqual([
        true,
        undefined,
      ]);
      expect(existsSync(join(out, done?.cell as string, 'summary.json'))).toBe(true);
      expect(existsSync(join(out, other?.cell as string, 'summary.json'))).toBe(false);
      expect(exported.stderr.trim().split('\n')).toEqual([
        expect.stringMatching(
          new RegExp(
            `warning: 1 of 2 cell\\(s\\) not finished yet, not exported: ${other?.cell} \\(${state}\\); export again once \`plan status ${id}\` says done$`,
          ),
        ),
      ]);
      expect(await watch.exited).toBe(0);
      const lines = watch.out().trim().split('\n');
      // No line twice: only changes are printed. The first read names both cells; the last says the plan is done.
      expect(new Set(lines.map((l) => l.replace(/^\S+ /, ''))).size).toBe(lines.length);
      expect(lines.at(-1)).toMatch(new RegExp(`^\\S+Z plan faults \\(${id}\\): done$`));
      expect(lines).toContainEqual(expect.stringMatching(/^\S+Z slow\/default: done 120\/120$/));
      expect(lines.filter((l) => /m\/default: done 120\/120$/.test(l))).toHaveLength(1);
      const again = await rumedbench('plan', 'export', id, '--db', db, '--out', out, '--overwrite');
      expect(again.code, again.stderr).toBe(0);
    } finally {
      watch.child.kill();
      w.child.kill('SIGTERM');
      await w.exited;
    }
  }, 120_000);

  it('plan status --watch exits 3 when the plan is cancelled', async () => {
    const db = await freshDatabase('postgres');
    const s = await modelServer(0);
    const id = (await rumedbenchOk('plan', 'submit', onePlan(s), '--db', db)).stdout.trim();
    const watch = watchPlan(db, id);
    await new Promise((r) => setTimeout(r, 1500));
    await rumedbenchOk('plan', 'cancel', id, '--db', db);
    expect([await watch.exited, watch.out().trim().split('\n').at(-1)]).toEqual([
      3,
      expect.stringMatching(new RegExp(`^\\S+Z plan faults \\(${id}\\): cancelled$`)),
    ]);
  }, 30_000);
});
