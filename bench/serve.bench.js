// Benchmark: `rumedbench serve` (the built CLI, a real port) taking full public submissions (five tasks, 3,608
// lines, upstream's Feature-based predictions) from 1, 8 and 50 concurrent clients, on SQLite and, where a server
// is given (RUMEDBENCH_TEST_PG_URL, as `source .ci/postgres.sh` sets), on PostgreSQL. During the 50-client storm a
// reader asks for the board page every 25 ms. Afterwards every answered upload is checked: there, and once.
// Targets (issue #7): one upload under 100 ms (p50, 1 client); at least 20 uploads/s at 8 clients; board pages
// under 50 ms p95 during the storm; nothing lost or duplicated.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

// `--entries N`: the board at scale (seeded, then read and uploaded to), in a script of its own.
if (process.argv.includes('--entries')) {
  await import('./serve-board.bench.js');
  process.exit(0);
}

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const shared = resolve(root, '..', 'shared', 'rumedbench');
const dataDir = process.env.RUMEDBENCH_DATA || join(shared, 'data');
const preds = join(shared, 'reference-predictions', 'linear_models');
if (!existsSync(dataDir) || !existsSync(preds)) {
  console.log(`skipped: RuMedBench data or reference predictions not found (${dataDir})`);
  process.exit(0);
}
const TASKS = ['RuMedTop3', 'RuMedSymptomRec', 'RuMedDaNet', 'RuMedNLI', 'RuMedNER'];
const files = TASKS.map((t) => ({ name: `${t}.jsonl`, data: readFileSync(join(preds, `${t}.jsonl`)) }));
const ADMIN = `bench-admin-${randomBytes(16).toString('hex')}`;
const cli = join(root, 'dist/bin/rumedbench.js');
// Side by side with another build (say the commit before a change): RUMEDBENCH_BENCH_BEFORE=/path/to/dist/bin/rumedbench.js.
const before = process.env.RUMEDBENCH_BENCH_BEFORE;
// This build rate-limits token uploads (60 a minute by default); the bench uploads far more on purpose.
const BUILDS = [
  ...(before ? [{ label: 'before', cli: before, args: ['--token-per-minute', '1000000'] }] : []),
  { label: before ? 'after' : 'this', cli, args: ['--token-per-minute', '1000000'] },
];
// Asks for the board page every 25 ms and prints each answer's latency in ms.
const READER = `
const url = process.argv[1];
(async () => {
  for (;;) {
    const t0 = performance.now();
    const res = await fetch(url + '/');
    await res.text();
    process.stdout.write((performance.now() - t0).toFixed(2) + '\\n');
    await new Promise((r) => setTimeout(r, 25));
  }
})();
`;

function start(db, build) {
  const child = spawn(process.execPath, [build.cli, 'serve', '--db', db, '--port', '0', ...build.args], {
    env: { ...process.env, RUMEDBENCH_DATA: dataDir, RUMEDBENCH_ADMIN_TOKEN: ADMIN },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  return new Promise((res, rej) => {
    child.stderr.on('data', (d) => {
      log += d;
      const m = /leaderboard on (http:\/\/\S+)/.exec(log);
      if (m) res({ url: m[1], child });
    });
    child.once('exit', (c) => rej(new Error(`serve exited ${c}: ${log}`)));
  });
}

function token(db, build) {
  const out = spawn(
    process.execPath,
    [build.cli, 'serve', 'token', 'create', '--team', 'bench', '--db', db],
    {
      env: { ...process.env, RUMEDBENCH_DATA: dataDir },
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  );
  let text = '';
  out.stdout.on('data', (d) => {
    text += d;
  });
  return new Promise((res) => out.once('exit', () => res(/token: (\S+)/.exec(text)[1])));
}

async function uploadOnce(url, auth, n) {
  const fd = new FormData();
  for (const f of files) fd.append('file', new Blob([f.data]), f.name);
  fd.append('model', `bench-${n}`);
  fd.append('kind', 'feature-based');
  const t0 = performance.now();
  const res = await fetch(`${url}/api/submissions`, {
    method: 'POST',
    body: fd,
    headers: { authorization: `Bearer ${auth}`, 'idempotency-key': `bench-${n}` },
  });
  const body = await res.json();
  return { ms: performance.now() - t0, status: res.status, id: body.id };
}

const pct = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

async function round(url, auth, clients, total, counter, answered) {
  const times = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < total) {
        next++;
        const r = await uploadOnce(url, auth, counter.n++);
        if (r.status !== 201) throw new Error(`upload answered ${r.status}`);
        answered.push(r.id);
        times.push(r.ms);
      }
    }),
  );
  const wall = (performance.now() - t0) / 1000;
  return { p50: pct(times, 0.5), p95: pct(times, 0.95), rate: total / wall };
}

async function engineRun(name, db, build) {
  const auth = await token(db, build);
  const { url, child } = await start(db, build);
  const answered = [];
  const counter = { n: 0 };
  try {
    await round(url, auth, 2, 6, counter, answered); // warm the workers
    const rows = [];
    for (const [clients, total] of [
      [1, 30],
      [8, 120],
      [50, 250],
    ]) {
      // The reader runs in a process of its own, so that the uploading clients' work does not delay its clock.
      const pages = [];
      const reader =
        clients === 50
          ? spawn(process.execPath, ['-e', READER, url], { stdio: ['ignore', 'pipe', 'inherit'] })
          : undefined;
      reader?.stdout.on('data', (d) => {
        for (const l of String(d).split('\n')) if (l) pages.push(Number(l));
      });
      const r = await round(url, auth, clients, total, counter, answered);
      if (reader) {
        reader.kill('SIGTERM');
        await new Promise((res) => reader.once('exit', res));
      }
      rows.push({
        clients,
        total,
        ...r,
        page95: pages.length ? pct(pages, 0.95) : null,
        pages: pages.length,
      });
    }
    // Nothing lost, nothing twice: every answered id is on the board, once.
    await new Promise((r) => setTimeout(r, 1100));
    // Every page of the board (a build before the API paged answers them all at once, without next_cursor).
    const ids = [];
    for (let cursor = null; ; ) {
      const page = await (
        await fetch(`${url}/api/boards/public?limit=1000${cursor ? `&cursor=${cursor}` : ''}`)
      ).json();
      ids.push(...page.entries.map((e) => e.id));
      cursor = page.next_cursor;
      if (!cursor) break;
    }
    const lost = answered.filter((id) => !ids.includes(id)).length;
    const dup = ids.length - new Set(ids).size;
    return {
      name: `${name} ${build.label}`,
      engine: name,
      build: build.label,
      rows,
      lost,
      dup,
      count: ids.length,
      answered: answered.length,
    };
  } finally {
    child.kill('SIGTERM');
  }
}

async function pgDatabase(base) {
  const name = `rmb_bench_${randomBytes(4).toString('hex')}`;
  const c = new pg.Client({ connectionString: base });
  await c.connect();
  await c.query(`CREATE DATABASE ${name}`);
  await c.end();
  const u = new URL(base);
  u.pathname = `/${name}`;
  return u.toString();
}

const runs = [];
const pgUrl = process.env.RUMEDBENCH_TEST_PG_URL;
if (!pgUrl)
  console.log(
    'PostgreSQL skipped: set RUMEDBENCH_TEST_PG_URL (`source .ci/postgres.sh` starts a throwaway server)',
  );
for (const build of BUILDS) {
  runs.push(
    await engineRun(
      'SQLite',
      join(mkdtempSync(join(tmpdir(), 'rumedbench-bench-serve-')), 'b.sqlite'),
      build,
    ),
  );
  if (pgUrl) runs.push(await engineRun('PostgreSQL', await pgDatabase(pgUrl), build));
}

const f = (x) => (x === null ? '–' : x.toFixed(0));
console.log('engine + build     clients  uploads  p50 ms  p95 ms  uploads/s  board page p95 ms (n)');
for (const r of runs) {
  for (const row of r.rows) {
    console.log(
      `${r.name.padEnd(17)}  ${String(row.clients).padStart(7)}  ${String(row.total).padStart(7)}  ${f(row.p50).padStart(6)}  ${f(row.p95).padStart(6)}  ${row.rate.toFixed(1).padStart(9)}  ${row.page95 === null ? '–' : `${f(row.page95)} (${row.pages})`}`,
    );
  }
  console.log(
    `${r.name}: ${r.answered} answered 201, ${r.count} on the board, ${r.lost} lost, ${r.dup} duplicated`,
  );
}
if (before) {
  console.log('\nafter / before (p50 and p95: lower is better; uploads/s: higher is better)');
  for (const a of runs.filter((r) => r.build === 'after')) {
    const b = runs.find((r) => r.build === 'before' && r.engine === a.engine);
    a.rows.forEach((row, i) => {
      const old = b.rows[i];
      console.log(
        `${a.engine.padEnd(10)} ${String(row.clients).padStart(3)} clients: p50 ${(row.p50 / old.p50).toFixed(2)}x, p95 ${(row.p95 / old.p95).toFixed(2)}x, uploads/s ${(row.rate / old.rate).toFixed(2)}x${row.page95 !== null && old.page95 !== null ? `, board page p95 ${(row.page95 / old.page95).toFixed(2)}x` : ''}`,
      );
    });
  }
}
const ok = runs.every(
  (r) => r.rows[0].p50 < 100 && r.rows[1].rate >= 20 && r.rows[2].page95 < 50 && r.lost === 0 && r.dup === 0,
);
console.log(
  `targets (p50 < 100 ms, >= 20/s at 8 clients, pages p95 < 50 ms, none lost): ${ok ? 'met' : 'NOT all met'}`,
);
