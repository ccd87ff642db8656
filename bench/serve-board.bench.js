// Benchmark: a board at scale (issue #44). `npm run bench:serve -- --entries 5000` seeds a public board through the
// real upload path (the built CLI's `serve` on SQLite, a real port, 8 clients, each upload the Feature-based
// predictions with a seeded tenth of RuMedDaNet's and RuMedNLI's answers changed, so that entries differ): `--uploads`
// of them (default 400) uploaded, and the rest copies of their stored rows (scores, per-item counts) under new ids and
// names, written into the database directly while no server runs (5,000 uploads take 4 to 25 minutes on the shared
// 2-core machine; `--uploads 5000` uploads them all). Then,
// for each build on a copy of that database: the cold start's ranking time (until the API says `current`, or the
// timeout), the board page's and the API's sizes, page and API latency while idle, and page latency and upload
// rate while 8 clients upload. With RUMEDBENCH_BENCH_BEFORE=/path/to/other/dist/bin/rumedbench.js the other build is
// measured first, side by side, on the same seeded board, and the ratios are printed.
// Flags: --entries N (default 5000), --rank-timeout S (default 180), --load-uploads N (default 96),
// --idle-s S (default 15).
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import SQLite from 'better-sqlite3';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const shared = resolve(root, '..', 'shared', 'rumedbench');
const dataDir = process.env.RUMEDBENCH_DATA || join(shared, 'data');
// Upstream's prediction files, found as the tests find them: RUMEDBENCH_REFERENCE, else reference-predictions/ in or
// beside the data folder, else in the workspace beside the repository.
const referenceDir =
  process.env.RUMEDBENCH_REFERENCE ||
  [join(dataDir, 'reference-predictions'), join(dataDir, '..', 'reference-predictions')].find((d) =>
    existsSync(d),
  ) ||
  join(shared, 'reference-predictions');
const preds = join(referenceDir, 'linear_models');
// Each thing missing is named, with the variable that points at it elsewhere.
const missing = [
  ...(existsSync(dataDir) ? [] : [`the data (${dataDir}; set RUMEDBENCH_DATA)`]),
  ...(existsSync(preds)
    ? []
    : [
        `upstream's Feature-based predictions (${preds}; set RUMEDBENCH_REFERENCE to the folder holding linear_models/)`,
      ]),
];
if (missing.length > 0) {
  console.log(`skipped: not found: ${missing.join('; ')}`);
  process.exit(0);
}
const { values: flags } = parseArgs({
  options: {
    entries: { type: 'string', default: '5000' },
    'rank-timeout': { type: 'string', default: '180' },
    'load-uploads': { type: 'string', default: '96' },
    'idle-s': { type: 'string', default: '15' },
    uploads: { type: 'string', default: '400' },
  },
  allowPositionals: false,
});
const ENTRIES = Number(flags.entries);
const RANK_TIMEOUT_MS = Number(flags['rank-timeout']) * 1000;
const LOAD_UPLOADS = Number(flags['load-uploads']);
const IDLE_MS = Number(flags['idle-s']) * 1000;
const CLIENTS = 8;
const UPLOADS = Math.min(ENTRIES, Number(flags.uploads));

const TASKS = ['RuMedTop3', 'RuMedSymptomRec', 'RuMedDaNet', 'RuMedNLI', 'RuMedNER'];
const lines = Object.fromEntries(
  TASKS.map((t) => [
    t,
    readFileSync(join(preds, `${t}.jsonl`), 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== ''),
  ]),
);
const CHANGE = {
  RuMedDaNet: { да: 'нет', нет: 'да' },
  RuMedNLI: { entailment: 'neutral', neutral: 'contradiction', contradiction: 'entailment' },
};

/** mulberry32: one seeded generator per upload, so that the n-th upload is the same bytes on every run. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The n-th upload's files: the Feature-based predictions, a tenth of two tasks' answers changed. */
function filesOf(n) {
  const r = rng(n + 1);
  return TASKS.map((t) => {
    const change = CHANGE[t];
    const text = change
      ? lines[t]
          .map((l) => {
            if (r() >= 0.1) return l;
            const rec = JSON.parse(l);
            rec.prediction = change[rec.prediction] ?? rec.prediction;
            return JSON.stringify(rec);
          })
          .join('\n')
      : lines[t].join('\n');
    return { name: `${t}.jsonl`, data: Buffer.from(`${text}\n`) };
  });
}

const ADMIN = `bench-admin-${randomBytes(16).toString('hex')}`;
const cli = join(root, 'dist/bin/rumedbench.js');
const before = process.env.RUMEDBENCH_BENCH_BEFORE;
/** A build's flags: uploads unlimited; reads unlimited where the build limits them (the bench reads far more). */
function buildOf(label, path) {
  const help = spawnSync(process.execPath, [path, 'serve', '--help'], { encoding: 'utf8' }).stdout;
  return {
    label,
    cli: path,
    args: [
      '--token-per-minute',
      '1000000',
      ...(help.includes('--api-per-minute') ? ['--api-per-minute', '0'] : []),
    ],
  };
}
const BUILDS = [...(before ? [buildOf('before', before)] : []), buildOf(before ? 'after' : 'this', cli)];

// Asks for a path every 25 ms for a while and prints each answer's latency in ms.
const READER = `
const [url, ms] = [process.argv[1], Number(process.argv[2])];
(async () => {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const t0 = performance.now();
    const res = await fetch(url);
    await res.arrayBuffer();
    if (res.status !== 200) { process.stderr.write('reader: ' + res.status + '\\n'); process.exit(1); }
    process.stdout.write((performance.now() - t0).toFixed(2) + '\\n');
    await new Promise((r) => setTimeout(r, 25));
  }
})();
`;

/** A reader in a process of its own (the uploaders' work does not delay its clock): its latencies, once it ends. */
function reader(url, ms) {
  const child = spawn(process.execPath, ['-e', READER, url, String(ms)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const times = [];
  let rest = '';
  child.stdout.on('data', (d) => {
    const parts = (rest + d).split('\n');
    rest = parts.pop();
    for (const l of parts) if (l) times.push(Number(l));
  });
  const done = new Promise((res) => child.once('exit', () => res(times)));
  return Object.assign(done, { stop: () => child.kill('SIGTERM') });
}

/** Node.js flags for the servers measured (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`: NODE_OPTIONS refuses it). */
const SERVE_NODE_ARGS = (process.env.RUMEDBENCH_BENCH_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');

function start(db, build, nodeArgs = SERVE_NODE_ARGS) {
  const child = spawn(
    process.execPath,
    [...nodeArgs, build.cli, 'serve', '--db', db, '--port', '0', ...build.args],
    {
      env: { ...process.env, RUMEDBENCH_DATA: dataDir, RUMEDBENCH_ADMIN_TOKEN: ADMIN },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let log = '';
  const t0 = performance.now();
  return new Promise((res, rej) => {
    child.stderr.on('data', (d) => {
      log += d;
      const m = /leaderboard on (http:\/\/\S+)/.exec(log);
      if (m) res({ url: m[1], child, startedMs: performance.now() - t0 });
    });
    child.once('exit', (c) => rej(new Error(`serve exited ${c}: ${log}`)));
  });
}

/** Stops a server: SIGTERM, and SIGKILL 10 s later (a server stops only once a ranking under way has ended). */
const stop = (child) =>
  new Promise((res) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(kill);
      res();
    });
    child.kill('SIGTERM');
  });

function token(db, build) {
  const out = spawnSync(
    process.execPath,
    [build.cli, 'serve', 'token', 'create', '--team', 'bench', '--db', db],
    {
      env: { ...process.env, RUMEDBENCH_DATA: dataDir },
      encoding: 'utf8',
    },
  );
  return /token: (\S+)/.exec(out.stdout)[1];
}

async function uploadOnce(url, auth, n) {
  const fd = new FormData();
  for (const f of filesOf(n)) fd.append('file', new Blob([f.data]), f.name);
  fd.append('model', `bench-${n}`);
  fd.append('kind', 'feature-based');
  const t0 = performance.now();
  const res = await fetch(`${url}/api/submissions`, {
    method: 'POST',
    body: fd,
    headers: { authorization: `Bearer ${auth}`, 'idempotency-key': `bench-${n}` },
  });
  await res.arrayBuffer();
  if (res.status !== 201) throw new Error(`upload ${n} answered ${res.status}`);
  return performance.now() - t0;
}

async function uploads(url, auth, from, count) {
  const times = [];
  let next = from;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < from + count) times.push(await uploadOnce(url, auth, next++));
    }),
  );
  return { times, rate: count / ((performance.now() - t0) / 1000) };
}

const pct = (xs, q) => {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

/** Milliseconds until the board's ranking is current (null: not within the timeout). Asks every 2 s. */
async function rankingSettles(url) {
  const t0 = performance.now();
  while (performance.now() - t0 < RANK_TIMEOUT_MS) {
    const body = await (await fetch(`${url}/api/boards/public?limit=1`)).json();
    if (body.ranking?.status === 'current') return performance.now() - t0;
    await new Promise((r) => setTimeout(r, 2000));
  }
  return null;
}

const bytes = async (url) => (await (await fetch(url)).arrayBuffer()).byteLength;

// Seeding: once, with the first build, through the real upload path.
const dir = mkdtempSync(join(tmpdir(), 'rumedbench-bench-board-'));
const seedDb = join(dir, 'seed.sqlite');
const seeder = BUILDS[0];
const auth = token(seedDb, seeder);
let seedS = 0;
console.log(
  `seeding ${ENTRIES} entries (${UPLOADS} uploaded) with ${seeder.label}'s build, ${CLIENTS} clients…`,
);
{
  const { url, child } = await start(seedDb, seeder, []);
  const t0 = performance.now();
  let done = 0;
  const step = Math.max(CLIENTS, Math.min(500, UPLOADS));
  while (done < UPLOADS) {
    const n = Math.min(step, UPLOADS - done);
    await uploads(url, auth, done, n);
    done += n;
    console.log(`  ${done} uploaded, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  }
  seedS = (performance.now() - t0) / 1000;
  await stop(child);
  copyRows(seedDb, ENTRIES - UPLOADS);
}

/** Copies of the uploaded rows, as other models under new ids, until the board holds `count` more. */
function copyRows(db, count) {
  if (count <= 0) return;
  const sqlite = new SQLite(db);
  const rows = sqlite.prepare("SELECT * FROM submissions WHERE board = 'public' AND status = 'scored'").all();
  const cols = Object.keys(rows[0]);
  const insert = sqlite.prepare(
    `INSERT INTO submissions (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`,
  );
  const base = Date.parse(rows[rows.length - 1].created_at);
  sqlite.transaction(() => {
    for (let i = 0; i < count; i++) {
      const from = rows[i % rows.length];
      const row = {
        ...from,
        id: randomUUID(),
        created_at: new Date(base + (i + 1) * 1000).toISOString(),
        model: `bench-copy-${i}`,
        content_hash: `bench-copy-${i}`,
        idempotency_key: null,
        duplicate_of: null,
      };
      insert.run(...cols.map((c) => row[c]));
    }
  })();
  sqlite.close();
  console.log(`  ${count} rows copied`);
}

const runs = [];
for (const build of BUILDS) {
  const db = join(dir, `${build.label}.sqlite`);
  for (const ext of ['', '-wal', '-shm']) if (existsSync(seedDb + ext)) copyFileSync(seedDb + ext, db + ext);
  console.log(`${build.label}: cold start on the seeded board…`);
  const { url, child } = await start(db, build);
  try {
    const rankMs = await rankingSettles(url);
    console.log(
      `  ranking: ${rankMs === null ? `not current within ${RANK_TIMEOUT_MS / 1000} s` : `${(rankMs / 1000).toFixed(1)} s`}`,
    );
    const sizes = { page: await bytes(`${url}/`), api: await bytes(`${url}/api/boards/public`) };
    const idlePage = await reader(`${url}/`, IDLE_MS);
    const idleApi = await reader(`${url}/api/boards/public`, IDLE_MS);
    console.log(`  idle: ${idlePage.length} pages, ${idleApi.length} API answers`);
    // A reader for as long as the uploads take (new entries, not repeats of the seeded ones).
    const pages = reader(`${url}/`, 24 * 60 * 60 * 1000);
    const load = await uploads(url, auth, ENTRIES + (build === BUILDS[0] ? 0 : 100_000), LOAD_UPLOADS);
    pages.stop();
    const loaded = await pages;
    runs.push({
      build: build.label,
      rankMs,
      sizes,
      idlePage: [pct(idlePage, 0.5), pct(idlePage, 0.95), idlePage.length],
      idleApi: [pct(idleApi, 0.5), pct(idleApi, 0.95), idleApi.length],
      loadPage: [pct(loaded, 0.5), pct(loaded, 0.95), loaded.length],
      upload: [pct(load.times, 0.5), pct(load.times, 0.95), load.rate],
    });
  } finally {
    await stop(child);
  }
}

const f0 = (x) => (x === null ? '–' : x.toFixed(0));
const kb = (b) => `${(b / 1024).toFixed(0)} KB`;
console.log(
  `\nboard of ${ENTRIES} entries on SQLite (${UPLOADS} uploaded in ${seedS.toFixed(0)} s, ${(UPLOADS / seedS).toFixed(1)}/s, the rest copies of their rows); ms are p50/p95 (n)`,
);
console.log(
  'build   cold ranking  page     API        page idle      API idle       page, 8 uploading   upload p50/p95, /s',
);
for (const r of runs)
  console.log(
    `${r.build.padEnd(7)} ${(r.rankMs === null ? `> ${RANK_TIMEOUT_MS / 1000} s` : `${(r.rankMs / 1000).toFixed(1)} s`).padEnd(13)} ${kb(r.sizes.page).padEnd(8)} ${kb(r.sizes.api).padEnd(10)} ${`${f0(r.idlePage[0])}/${f0(r.idlePage[1])} (${r.idlePage[2]})`.padEnd(14)} ${`${f0(r.idleApi[0])}/${f0(r.idleApi[1])} (${r.idleApi[2]})`.padEnd(14)} ${`${f0(r.loadPage[0])}/${f0(r.loadPage[1])} (${r.loadPage[2]})`.padEnd(19)} ${f0(r.upload[0])}/${f0(r.upload[1])}, ${r.upload[2].toFixed(1)}`,
  );
if (runs.length === 2) {
  const [b, a] = runs;
  const x = (n, o) => (n === null || o === null ? '–' : `${(n / o).toPrecision(2)}x`);
  console.log('\nafter / before (lower is better except uploads/s)');
  console.log(
    `page size ${x(a.sizes.page, b.sizes.page)}, API size ${x(a.sizes.api, b.sizes.api)}, page idle p50 ${x(a.idlePage[0], b.idlePage[0])} p95 ${x(a.idlePage[1], b.idlePage[1])}, API idle p50 ${x(a.idleApi[0], b.idleApi[0])} p95 ${x(a.idleApi[1], b.idleApi[1])}, page under uploads p50 ${x(a.loadPage[0], b.loadPage[0])} p95 ${x(a.loadPage[1], b.loadPage[1])}, upload p50 ${x(a.upload[0], b.upload[0])}, uploads/s ${x(a.upload[2], b.upload[2])}, cold ranking ${x(a.rankMs, b.rankMs)}`,
  );
}
const mine = runs[runs.length - 1];
console.log(
  `targets (#44: page <= 200 KB, page p95 <= 100 ms under ${CLIENTS} uploading clients): page ${kb(mine.sizes.page)}, p95 ${f0(mine.loadPage[1])} ms: ${mine.sizes.page <= 200 * 1024 && mine.loadPage[1] <= 100 ? 'met' : 'NOT all met'}`,
);
