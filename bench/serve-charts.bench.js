// Benchmark (issue #57, finding 4): can entry pages starve uploads? `rumedbench serve` (the built CLI, a real port,
// SQLite) with a board of N entries; upload p50 (full public submissions, one client) measured idle, then while 8
// readers, each a process of its own, cycle through uncached entry pages (every entry in two languages, each
// reader starting elsewhere, so that nearly every page is drawn anew). Rate limits are off (--api-per-minute 0):
// the readers stand for many addresses, which a per-address limit does not stop. Target: upload p50 under load
// within 2x of idle. The board's 100 entries make 200 pages, more than the readers draw while the uploads are
// timed (drawn once, a page is kept: a smaller board would be measured against cached pages). Side by side with
// another build: RUMEDBENCH_BENCH_BEFORE=/path/to/dist/bin/rumedbench.js runs both, alternating, on the same
// machine. Numbers on a shared machine are indicative: compare ratios, not times.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const shared = resolve(root, '..', 'shared', 'rumedbench');
const dataDir = process.env.RUMEDBENCH_DATA || join(shared, 'data');
const preds = join(shared, 'reference-predictions', 'linear_models');
if (!existsSync(dataDir) || !existsSync(preds)) {
  console.log(`skipped: RuMedBench data or reference predictions not found (${dataDir})`);
  process.exit(0);
}
const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const ENTRIES = arg('--entries', 100);
const UPLOADS = arg('--uploads', 10);
const READERS = arg('--readers', 8);
const ROUNDS = arg('--rounds', 1);
const TASKS = ['RuMedTop3', 'RuMedSymptomRec', 'RuMedDaNet', 'RuMedNLI', 'RuMedNER'];
const base = Object.fromEntries(TASKS.map((t) => [t, readFileSync(join(preds, `${t}.jsonl`), 'utf8')]));
const danet = base.RuMedDaNet.trim().split('\n');
/** The public files with RuMedDaNet's answer `i` flipped: each upload distinct, each entry's charts its own. */
function filesFor(i) {
  const lines = [...danet];
  const k = i % lines.length;
  const r = JSON.parse(lines[k]);
  r.prediction = r.prediction === 'да' ? 'нет' : 'да';
  lines[k] = JSON.stringify(r);
  return TASKS.map((t) => ({ name: `${t}.jsonl`, data: t === 'RuMedDaNet' ? lines.join('\n') : base[t] }));
}

const cli = join(root, 'dist/bin/rumedbench.js');
const before = process.env.RUMEDBENCH_BENCH_BEFORE;
const BUILDS = [
  ...(before ? [{ label: 'before', cli: before }] : []),
  { label: before ? 'after' : 'this', cli },
];
const ARGS = ['--api-per-minute', '0', '--anonymous-per-minute', '1000000', '--token-per-minute', '1000000'];

// Cycles entry pages from `start` (a list of paths on stdin's first line) and prints each answer's status and ms.
const READER = `
const [url, start] = [process.argv[1], Number(process.argv[2])];
let paths = [];
// The bench gone (its pipe closed): so is the reader.
process.stdin.on('end', () => process.exit(0));
process.stdin.once('data', async (d) => {
  paths = JSON.parse(String(d));
  for (let i = start; ; i++) {
    const t0 = performance.now();
    const res = await fetch(url + paths[i % paths.length]);
    await res.arrayBuffer();
    process.stdout.write(res.status + ' ' + (performance.now() - t0).toFixed(1) + '\\n');
  }
});
`;

function start(build) {
  const db = join(mkdtempSync(join(tmpdir(), 'rumedbench-charts-bench-')), 'board.sqlite');
  const child = spawn(process.execPath, [build.cli, 'serve', '--db', db, '--port', '0', ...ARGS], {
    env: {
      ...process.env,
      RUMEDBENCH_DATA: dataDir,
      RUMEDBENCH_ADMIN_TOKEN: `bench-${randomBytes(16).toString('hex')}`,
    },
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

async function upload(url, i, tag) {
  const fd = new FormData();
  for (const f of filesFor(i)) fd.append('file', new Blob([f.data]), f.name);
  fd.append('model', `${tag}-${i}`);
  fd.append('kind', 'feature-based');
  const t0 = performance.now();
  const res = await fetch(`${url}/api/submissions`, { method: 'POST', body: fd });
  const body = await res.json();
  if (res.status !== 201)
    throw new Error(`upload answered ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
  return { ms: performance.now() - t0, id: body.id };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)] : Number.NaN;
};

async function measure(build, round) {
  const { url, child } = await start(build);
  try {
    const ids = [];
    for (let i = 0; i < ENTRIES; i++) ids.push((await upload(url, i, `seed${round}`)).id);
    const idle = [];
    for (let i = 0; i < UPLOADS; i++) idle.push((await upload(url, 10_000 + i, `idle${round}`)).ms);
    const paths = ids.flatMap((id) => [`/submissions/${id}?lang=en`, `/submissions/${id}?lang=ru`]);
    const pages = [];
    const readers = Array.from({ length: READERS }, (_, r) => {
      const p = spawn(
        process.execPath,
        ['-e', READER, url, String(Math.floor((r * paths.length) / READERS))],
        {
          stdio: ['pipe', 'pipe', 'inherit'],
        },
      );
      p.stdin.write(JSON.stringify(paths));
      p.stdout.on('data', (d) => {
        for (const l of String(d).split('\n')) {
          const [status, ms] = l.split(' ');
          if (status) pages.push({ status: Number(status), ms: Number(ms) });
        }
      });
      return p;
    });
    // The readers fill the server first (until each reader's first page could have come back: as many pages as
    // readers answered, or 30 s), then the uploads are timed among them; the pages counted are those answered while
    // the uploads were timed.
    for (const t0 = performance.now(); pages.length < READERS && performance.now() - t0 < 30_000; )
      await new Promise((r) => setTimeout(r, 100));
    const from = pages.length;
    const t0 = performance.now();
    const loaded = [];
    for (let i = 0; i < UPLOADS; i++) loaded.push((await upload(url, 20_000 + i, `load${round}`)).ms);
    const seconds = (performance.now() - t0) / 1000;
    const during = pages.slice(from);
    for (const p of readers) p.kill('SIGTERM');
    await Promise.all(readers.map((p) => new Promise((r) => p.once('exit', r))));
    const ok = during.filter((p) => p.status === 200);
    return {
      build: build.label,
      idle: median(idle),
      loaded: median(loaded),
      pages: during.length,
      seconds,
      drawn: ok.length,
      busy: during.filter((p) => p.status === 503).length,
      pageMs: median(ok.map((p) => p.ms)),
    };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

const rows = [];
for (let round = 0; round < ROUNDS; round++)
  for (const build of round % 2 ? [...BUILDS].reverse() : BUILDS) {
    const r = await measure(build, round);
    rows.push(r);
    console.log(
      `${r.build.padEnd(6)} upload p50 idle ${r.idle.toFixed(0)} ms, with ${READERS} readers ${r.loaded.toFixed(0)} ms (${(r.loaded / r.idle).toFixed(2)}x); meanwhile ${r.pages} pages answered in ${r.seconds.toFixed(1)} s (${r.drawn} drawn, median ${r.pageMs.toFixed(0)} ms; ${r.busy} busy 503)`,
    );
  }
console.log(
  `\n${ENTRIES} entries, ${UPLOADS} uploads timed per phase, ${READERS} readers; target: loaded/idle <= 2 (indicative on a shared machine)`,
);
for (const b of BUILDS) {
  const mine = rows.filter((r) => r.build === b.label);
  console.log(`${b.label}: loaded/idle ratios ${mine.map((r) => (r.loaded / r.idle).toFixed(2)).join(', ')}`);
}
