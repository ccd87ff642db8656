/**
 * `serve` under an operator's faults (#60): a stop that stops (idle and slow connections closed after the grace
 * period, a second signal at once), and the probes an orchestrator asks: /healthz (alive), /readyz (the database
 * answers, migrations current, the held gold loaded) and the Prometheus metrics on their own loopback port.
 */

import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rumedbenchOk } from '../helpers/cli.js';
import { freshDatabase, PG_URL } from '../helpers/engines.js';
import { startFakeOpenAI } from '../helpers/fake-openai.js';
import { fixtureDataDir, writeFixturePredictions } from '../helpers/fixture-data.js';
import { NO_OWN_PG_REASON, startOwnPostgres } from '../helpers/own-postgres.js';
import { startServe, uploadTo } from '../helpers/server.js';
import { query, startWorker, waitFor } from '../helpers/workers.js';

const DATA = fixtureDataDir();
const sqliteDb = () => join(mkdtempSync(join(tmpdir(), 'rumedbench-sops-')), 'board.sqlite');

describe('serve stops within its grace period', () => {
  it('a slowloris upload (10 bytes a second) and an idle keep-alive connection: SIGTERM exits 0 within the 10 s grace, a second signal at once', async () => {
    const board = await startServe(['--db', sqliteDb()], { RUMEDBENCH_DATA: DATA });
    const { hostname, port } = new URL(board.url);
    const open = (head: string) =>
      new Promise<ReturnType<typeof connect>>((resolve) => {
        const s = connect(Number(port), hostname, () => {
          s.write(head);
          resolve(s);
        });
        s.on('error', () => {});
      });
    const idle = await open(
      `GET /healthz HTTP/1.1\r\nHost: ${board.url.slice(7)}\r\nConnection: keep-alive\r\n\r\n`,
    );
    const slow = await open(
      `POST /api/submissions HTTP/1.1\r\nHost: ${board.url.slice(7)}\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: 100000\r\n\r\n`,
    );
    const drip = setInterval(() => slow.write('xxxxxxxxxx'), 1000);
    try {
      await new Promise((r) => setTimeout(r, 1500));
      const exited = new Promise<number>((resolve) => board.child.once('exit', () => resolve(Date.now())));
      const t0 = Date.now();
      board.child.kill('SIGTERM');
      const at = await Promise.race([exited, new Promise<number>((r) => setTimeout(() => r(0), 25_000))]);
      expect(at === 0 ? 'alive after 25 s' : at - t0 < 13_000, board.log()).toBe(true);
      expect(board.child.exitCode, board.log()).toBe(0);
      expect(board.log()).toMatch(/requests still under way after 10 s: their connections are closed/);
      expect(board.log()).not.toMatch(/^\s+at /m);
    } finally {
      clearInterval(drip);
      idle.destroy();
      slow.destroy();
    }
  }, 40_000);

  it('a second signal exits at once, whatever is under way', async () => {
    const board = await startServe(['--db', sqliteDb()], { RUMEDBENCH_DATA: DATA });
    const { hostname, port } = new URL(board.url);
    const slow = connect(Number(port), hostname, () =>
      slow.write(
        `POST /api/submissions HTTP/1.1\r\nHost: ${board.url.slice(7)}\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: 100000\r\n\r\n`,
      ),
    );
    slow.on('error', () => {});
    await new Promise((r) => setTimeout(r, 500));
    const exited = new Promise<number>((resolve) => board.child.once('exit', () => resolve(Date.now())));
    board.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    const t0 = Date.now();
    board.child.kill('SIGTERM');
    const at = await exited;
    expect([at - t0 < 1000, board.child.exitCode]).toEqual([true, 0]);
    slow.destroy();
  }, 30_000);
});

describe.skipIf(NO_OWN_PG_REASON !== undefined)('probes and metrics (PostgreSQL of the test’s own)', () => {
  it('/healthz alive, /readyz 503 naming the database while it is stopped and 200 once back; /metrics on its own loopback port', async () => {
    const own = await startOwnPostgres();
    const board = await startServe(['--db', own.url, '--metrics-port', '0'], { RUMEDBENCH_DATA: DATA });
    try {
      const ready = await fetch(`${board.url}/readyz`);
      expect([ready.status, await ready.json()]).toEqual([
        200,
        { ready: true, checks: { database: 'ok', migrations: 'ok', gold: 'ok' } },
      ]);
      const m = /metrics on (http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(board.log());
      expect(m, board.log()).not.toBeNull();
      const text = await (await fetch(m?.[1] as string)).text();
      expect(text).toMatch(/^# TYPE rumedbench_ready gauge\nrumedbench_ready 1$/m);
      expect(text).toMatch(/^# TYPE rumedbench_queue_cells gauge$/m);
      expect(text).toMatch(/^# TYPE rumedbench_endpoint_in_flight gauge$/m);
      // Not on the board's port.
      expect((await fetch(`${board.url}/metrics`)).status).toBe(404);
      own.down();
      const health = await fetch(`${board.url}/healthz`);
      expect(health.status).toBe(200);
      const down = await fetch(`${board.url}/readyz`);
      const body = (await down.json()) as { ready: boolean; checks: { database: string } };
      expect([down.status, body.ready, body.checks.database]).toEqual([
        503,
        false,
        expect.stringMatching(/^unreachable \(/),
      ]);
      own.up();
      const back = await (async () => {
        for (let i = 0; i < 100; i++) {
          const r = await fetch(`${board.url}/readyz`);
          if (r.status === 200) return 200;
          await new Promise((x) => setTimeout(x, 200));
        }
        return 503;
      })();
      expect(back).toBe(200);
    } finally {
      await board.stop();
      own.stop();
    }
  }, 60_000);
});

describe.skipIf(!PG_URL)(
  'a database that goes away under serve (dropped, created again empty, restored)',
  () => {
    it('pages held in memory keep being served, the rest is 503 in one line, /readyz names how; one created again empty is migrated by serve in one line; a restored one is served again', async () => {
      const db = await freshDatabase('postgres');
      const name = new URL(db).pathname.slice(1);
      const admin = (text: string) => query(PG_URL as string, text);
      // A backup: the migrated database, copied while nothing is connected to it.
      const first = await startServe(['--db', db], { RUMEDBENCH_DATA: DATA });
      await first.stop();
      await admin(`CREATE DATABASE ${name}_bak TEMPLATE ${name}`);
      const board = await startServe(['--db', db], { RUMEDBENCH_DATA: DATA });
      const get = async (path: string) => {
        const r = await fetch(`${board.url}${path}`);
        return [r.status, path === '/readyz' ? await r.json() : (await r.text()).length > 0] as const;
      };
      try {
        expect((await get('/'))[0]).toBe(200);
        expect((await get('/api/boards/public'))[0]).toBe(200);
        await admin(`DROP DATABASE ${name} WITH (FORCE)`);
        // Held in memory: still served. Read from the database: 503, said as such.
        expect((await get('/'))[0]).toBe(200);
        expect((await get('/api/boards/public'))[0]).toBe(200);
        const entry = await fetch(`${board.url}/api/submissions/x`);
        expect([
          entry.status,
          entry.headers.get('retry-after'),
          ((await entry.json()) as { code: string }).code,
        ]).toEqual([503, '5', 'DATABASE_UNAVAILABLE']);
        expect(await get('/readyz')).toEqual([
          503,
          {
            ready: false,
            checks: {
              database: `missing (database "${name}" does not exist)`,
              migrations: 'not checked',
              gold: 'not checked',
            },
          },
        ]);
        await admin(`CREATE DATABASE ${name}`);
        // Created again empty: serve migrates it on its own within seconds, and is ready on it (what it held is gone).
        await waitFor('the empty database migrated by serve', async () =>
          /came back empty/.test(board.log()) ? true : undefined,
        );
        expect(await get('/readyz')).toEqual([
          200,
          { ready: true, checks: { database: 'ok', migrations: 'ok', gold: 'ok' } },
        ]);
        expect((await get('/'))[0]).toBe(200);
        expect((await fetch(`${board.url}/api/submissions/x`)).status).toBe(404);
        expect(
          (await query<{ n: number }>(db, 'SELECT count(*)::int AS n FROM rumedbench_runs.schema_version'))[0]
            ?.n,
        ).toBeGreaterThan(0);
        expect(
          board
            .log()
            .split('\n')
            .filter((l) => /came back empty/.test(l)),
        ).toEqual([
          expect.stringMatching(
            /^\S+Z warning: the database at postgres:\/\/\S+ came back empty \(dropped and created again\?\): migrated \(\d+ board migrations, queue schema version \d+\); the submissions, boards, held gold, admin token and plans it held are gone$/,
          ),
        ]);
        // Restored from the backup: ready again, and every page answers from the database.
        await admin(`DROP DATABASE ${name} WITH (FORCE)`);
        await admin(`CREATE DATABASE ${name} TEMPLATE ${name}_bak`);
        expect(await get('/readyz')).toEqual([
          200,
          { ready: true, checks: { database: 'ok', migrations: 'ok', gold: 'ok' } },
        ]);
        expect((await fetch(`${board.url}/api/submissions/x`)).status).toBe(404);
        const lines = board.log().split('\n');
        expect(
          lines.filter((l) => /^\s+at |INTERNAL|internal error/.test(l)),
          board.log(),
        ).toEqual([]);
        expect(
          lines.filter((l) => /GET \/api\/submissions\/x: the database/.test(l)),
          board.log(),
        ).toEqual([
          expect.stringMatching(
            /: the database does not exist \(dropped\?\): restore it \(database "\w+" does not exist\)$/,
          ),
        ]);
      } finally {
        await board.stop();
        await admin(`DROP DATABASE IF EXISTS ${name}_bak`);
      }
    }, 90_000);
  },
);

describe('the scoring time in /metrics', () => {
  it('each scored upload is counted in rumedbench_scoring_seconds (a Prometheus histogram), its seconds summed', async () => {
    const board = await startServe(['--db', sqliteDb(), '--metrics-port', '0'], { RUMEDBENCH_DATA: DATA });
    try {
      // Said on its own line, once its port is open (perhaps after the board's).
      const url = await waitFor(
        'the metrics port',
        async () => /metrics on (http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(board.log())?.[1],
      );
      const scoring = async () =>
        (await (await fetch(url)).text())
          .split('\n')
          .filter((l) => l.startsWith('rumedbench_scoring_seconds'));
      expect(await scoring()).toEqual([
        ...['0.05', '0.1', '0.25', '0.5', '1', '2.5', '5', '10', '30', '+Inf'].map(
          (le) => `rumedbench_scoring_seconds_bucket{le="${le}"} 0`,
        ),
        'rumedbench_scoring_seconds_sum 0',
        'rumedbench_scoring_seconds_count 0',
      ]);
      const predictions = writeFixturePredictions(DATA, mkdtempSync(join(tmpdir(), 'rumedbench-sops-p-')));
      for (const model of ['a', 'b']) {
        const r = await uploadTo(
          board.url,
          [{ name: 'RuMedDaNet.jsonl', data: readFileSync(join(predictions, 'RuMedDaNet.jsonl')) }],
          { model, kind: 'LLM' },
        );
        expect([r.status, r.body.status]).toEqual([201, 'scored']);
      }
      const after = await scoring();
      expect(after.slice(-3)).toEqual([
        'rumedbench_scoring_seconds_bucket{le="+Inf"} 2',
        expect.stringMatching(/^rumedbench_scoring_seconds_sum (0\.\d+|[1-9][\d.]*)$/),
        'rumedbench_scoring_seconds_count 2',
      ]);
      // Cumulative: no bucket counts more than the next one up.
      const counts = after.slice(0, 10).map((l) => Number(l.split(' ')[1]));
      expect(counts).toEqual([...counts].sort((x, y) => x - y));
      expect(Number(after.at(-2)?.split(' ')[1])).toBeGreaterThan(0);
    } finally {
      await board.stop();
    }
  }, 60_000);
});

describe.skipIf(!PG_URL)('every metric #60 lists, read in Prometheus text while a plan runs', () => {
  it('uploads, scoring time, queue depth, requests in flight per endpoint, cells by state, worker heartbeats', async () => {
    const db = await freshDatabase('postgres');
    const model = await startFakeOpenAI({
      reply: () => 'Ответ: да',
      behaviour: () => ({ kind: 'ok', delayMs: 400 }),
    });
    const board = await startServe(['--db', db, '--metrics-port', '0'], { RUMEDBENCH_DATA: DATA });
    const plan = join(mkdtempSync(join(tmpdir(), 'rumedbench-sops-m-')), 'plan.yaml');
    writeFileSync(
      plan,
      [
        'name: metrics',
        'split: test',
        'tasks: [RuMedDaNet]',
        `data: ${DATA}`,
        'defaults: {temperature: 0, max_tokens: 16, concurrency: 3, bootstrap: 0}',
        'models:',
        `  - {name: m, provider: openai, base_url: "${model.url}", model: fake-m}`,
        '',
      ].join('\n'),
    );
    const w = startWorker(db, 'metered');
    try {
      const url = await waitFor(
        'the metrics port',
        async () => /metrics on (http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(board.log())?.[1],
      );
      const predictions = writeFixturePredictions(DATA, mkdtempSync(join(tmpdir(), 'rumedbench-sops-p-')));
      const up = await uploadTo(
        board.url,
        [{ name: 'RuMedDaNet.jsonl', data: readFileSync(join(predictions, 'RuMedDaNet.jsonl')) }],
        { model: 'up', kind: 'LLM' },
      );
      expect([up.status, up.body.status]).toEqual([201, 'scored']);
      await rumedbenchOk('plan', 'submit', plan, '--db', db);
      // Read while the worker's requests are under way: its claim holds part of the endpoint's budget.
      const text = await waitFor('requests in flight', async () => {
        const t = await (await fetch(url)).text();
        return /^rumedbench_endpoint_in_flight\{endpoint="[^"]+"\} [1-9]/m.test(t) ? t : undefined;
      });
      const value = (name: string) =>
        text
          .split('\n')
          .filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
          .map((l) => l.replace(/ [\d.e+-]+$/, (v) => (Number(v) > 0 ? ' >0' : ' 0')));
      expect({
        uploads: value('rumedbench_submissions'),
        scoring: value('rumedbench_scoring_seconds_count'),
        depth: value('rumedbench_queue_depth'),
        inFlight: value('rumedbench_endpoint_in_flight'),
        cells: value('rumedbench_queue_cells'),
        heartbeats: value('rumedbench_worker_heartbeat_age_seconds').map((l) => l.replace(/ \S+$/, '')),
      }).toEqual({
        uploads: ['rumedbench_submissions{board="public",status="scored"} >0'],
        scoring: ['rumedbench_scoring_seconds_count >0'],
        depth: [expect.stringMatching(/^rumedbench_queue_depth (0|>0)$/)],
        inFlight: [`rumedbench_endpoint_in_flight{endpoint="openai ${model.url}"} >0`],
        // The one cell, in whichever state the queue gives it while its job runs.
        cells: [expect.stringMatching(/^rumedbench_queue_cells\{state="(queued|running)"\} >0$/)],
        heartbeats: ['rumedbench_worker_heartbeat_age_seconds{worker="metered",status="running"}'],
      });
      // Each metric declared once, as Prometheus reads it.
      for (const name of [
        'rumedbench_submissions',
        'rumedbench_queue_depth',
        'rumedbench_endpoint_in_flight',
        'rumedbench_queue_cells',
        'rumedbench_worker_heartbeat_age_seconds',
      ])
        expect(text.split('\n').filter((l) => l === `# TYPE ${name} gauge`)).toHaveLength(1);
      const age = Number(
        /^rumedbench_worker_heartbeat_age_seconds\{[^}]*\} (\S+)$/m.exec(text)?.[1] ?? 'NaN',
      );
      expect(age).toBeLessThan(5);
    } finally {
      w.child.kill('SIGTERM');
      await w.exited;
      await board.stop();
      await model.close();
    }
  }, 90_000);
});
