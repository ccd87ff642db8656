// Benchmark (issues #16, #64): one plan run by 1, 2 and 4 worker processes (`rumedbench worker`, each with 8 requests
// in flight) against a loopback OpenAI-compatible server that answers in 50 ms, on PostgreSQL. Reports requests per
// second of each (answers over the span from the first to the last, from the database's own timestamps, and over
// the wall time of the workers' processes), the speed-up from 1 to 4 workers (target: ≥ 3.5×), and the queue's
// time per job as the workers measure it (claim, reads, completion; target: < 20 ms). Every command is the built
// CLI in its own process.
//
// The profile (#64): where a worker's time goes. CPU ms per answered request of each worker process (its own
// getrusage at exit, through bench/worker-probe.mjs), of PostgreSQL's backends serving the plan's database (their
// /proc/PID/stat, sampled while the workers run; the server's background processes are not counted), and of the
// model server (its /proc/PID/stat before and after); round trips to the database per request and per job (every
// query of the workers' pg clients, counted in the process); the time a request waits for one of its worker's slots
// (the workers' closing line). PostgreSQL must run on this machine for its CPU to be read (else it reads n/a).
//
// `--runs N` (default 3) runs the worker counts N times, alternating their order (1, 2, 4 then 4, 2, 1, …), prints
// the load average at the start of each, and reports medians only: a shared machine's noise moves single runs.
//
// Before/after: `node bench/workers.bench.js --before OTHER/dist/bin/rumedbench.js --runs 5` runs that build and this one
// alternately (the order flips every run), the same plan on a fresh database each time, and prints the medians.
// `--jobs J --concurrency C --max-in-flight M --workers 1,2` change the shape (defaults 2, 8, 64 and 1,2,4): e.g.
// `--jobs 2 --concurrency 8 --max-in-flight 16 --workers 2` is two workers sharing a budget of 16.
// RUMEDBENCH_BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR" passes Node.js flags to the worker processes.
// RUMEDBENCH_BENCH_QUERIES=1 prints each worker's queries by their first words (which statements a job costs).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
const flag = (name) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const builds = [
  ...(flag('--before') ? [{ label: 'before', cli: resolve(flag('--before')) }] : []),
  { label: flag('--before') ? 'after' : 'this', cli: join(root, 'dist', 'bin', 'rumedbench.js') },
];
const runs = Math.max(1, Number(flag('--runs') ?? 3));
// The shape of the run: each worker's --jobs and --concurrency, the plan's max_in_flight, how many workers.
const jobs = flag('--jobs') ?? '2';
const concurrency = flag('--concurrency') ?? '8';
const maxInFlight = flag('--max-in-flight') ?? '64';
const counts = (flag('--workers') ?? '1,2,4').split(',').map(Number);
const [fewest, most] = [counts[0], counts.at(-1)];
const base = process.env.RUMEDBENCH_TEST_PG_URL;
if (!base) {
  console.log('skipped: no PostgreSQL (npm run bench:workers starts one; or set RUMEDBENCH_TEST_PG_URL)');
  process.exit(0);
}
const dataDir = process.env.RUMEDBENCH_DATA || resolve(root, '..', 'shared', 'rumedbench', 'data');
if (!existsSync(join(dataDir, 'RuMedNLI', 'test_v1.jsonl'))) {
  console.log(`skipped: RuMedBench data not found at ${dataDir}`);
  process.exit(0);
}

const server = spawn(process.execPath, [join(root, 'bench', 'zero-latency-server.js')], {
  stdio: ['ignore', 'pipe', 'inherit'],
  env: { ...process.env, LATENCY_MS: '50' },
});
const port = await new Promise((r) => server.stdout.once('data', (d) => r(Number(String(d).trim()))));
process.on('exit', () => server.kill());
const url = `http://127.0.0.1:${port}/v1`;

async function freshDb() {
  const name = `rmb_bench_${Math.random().toString(16).slice(2, 10)}`;
  const c = new pg.Client({ connectionString: base });
  await c.connect();
  await c.query(`CREATE DATABASE ${name}`);
  await c.end();
  const u = new URL(base);
  u.pathname = `/${name}`;
  return u.toString();
}

const plan = join(mkdtempSync(join(tmpdir(), 'rumedbench-bench-workers-')), 'plan.yaml');
writeFileSync(
  plan,
  [
    'name: bench-workers',
    'tasks: [RuMedDaNet, RuMedNLI]',
    `data: ${dataDir}`,
    `max_in_flight: ${maxInFlight}`,
    'defaults: {concurrency: 8, bootstrap: 0, max_tokens: 16}',
    'models:',
    ...[1, 2].map((i) => `  - {name: m${i}, provider: openai, base_url: "${url}", model: bench-${i}}`),
  ].join('\n'),
);

const PROBE = join(root, 'bench', 'worker-probe.mjs');
const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK']).toString().trim() || 100);

/** A process's CPU time so far (user + system), in ms, from /proc; undefined once it is gone or not ours to read. */
function cpuMs(pid) {
  try {
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
    const after = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').at(-1).split(' ');
    return (Number(after[11]) + Number(after[12])) * TICK_MS;
  } catch {
    return undefined;
  }
}

/**
 * PostgreSQL's backends serving `db` (their CPU, sampled every 200 ms while they live: a backend ends with its
 * connection). `stop()` answers the total in ms, or undefined when no backend could be read (a remote server).
 */
function watchBackends(db) {
  const name = new URL(db).pathname.slice(1);
  const seen = new Map();
  const c = new pg.Client({ connectionString: base });
  let timer;
  let reading = Promise.resolve();
  const sample = async () => {
    const { rows } = await c.query('SELECT pid FROM pg_stat_activity WHERE datname = $1', [name]);
    for (const { pid } of rows) {
      const ms = cpuMs(pid);
      if (ms !== undefined) seen.set(pid, Math.max(seen.get(pid) ?? 0, ms));
    }
  };
  const started = c.connect().then(() => {
    timer = setInterval(() => {
      reading = reading.then(sample).catch(() => {});
    }, 200);
  });
  return {
    async stop() {
      await started;
      clearInterval(timer);
      await reading;
      await sample().catch(() => {});
      await c.end();
      return seen.size === 0 ? undefined : [...seen.values()].reduce((a, b) => a + b, 0);
    },
  };
}

// Node.js flags for the worker processes, e.g. "--cpu-prof --cpu-prof-dir=DIR" to profile them (#64).
const WORKER_NODE_ARGS = (process.env.RUMEDBENCH_BENCH_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');

function worker(cli, db, name) {
  const child = spawn(
    process.execPath,
    // --allow-private: the model server listens on loopback.
    [
      ...WORKER_NODE_ARGS,
      '--import',
      PROBE,
      cli,
      'worker',
      '--db',
      db,
      '--name',
      name,
      '--exit-when-idle',
      '--jobs',
      jobs,
      '--concurrency',
      concurrency,
      '--allow-private',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  child.stderr.on('data', (d) => {
    log += d;
  });
  return new Promise((r, reject) =>
    child.once('exit', (code) => (code === 0 ? r(log) : reject(new Error(`worker exited ${code}:\n${log}`)))),
  );
}

async function once(cli, n) {
  const db = await freshDb();
  const id = execFileSync(process.execPath, [
    cli,
    'plan',
    'submit',
    plan,
    '--db',
    db,
    '--job-size',
    '50',
    '--quiet',
  ])
    .toString()
    .trim();
  const load = Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
  const serverBefore = cpuMs(server.pid);
  const backends = watchBackends(db);
  const t0 = performance.now();
  const logs = await Promise.all(Array.from({ length: n }, (_, i) => worker(cli, db, `w${i + 1}`)));
  const wall = (performance.now() - t0) / 1000;
  const pgMs = await backends.stop();
  const serverMs = cpuMs(server.pid) - serverBefore;
  const c = new pg.Client({ connectionString: db });
  await c.connect();
  const { rows: r } = await c.query(
    `SELECT count(*)::int AS n, extract(epoch FROM max(at) - min(at))::float AS span FROM rumedbench_runs.answers WHERE plan_id = $1`,
    [id],
  );
  await c.end();
  const perJob = logs
    .map((l) => /queue time per job: median ([\d.]+) ms/.exec(l)?.[1])
    .filter(Boolean)
    .map(Number);
  // Each worker's closing line (requests, jobs, slot wait) and its probe's (CPU, queries).
  const each = logs.map((l) => {
    const end = /stopped after (\d+) request\(s\) in (\d+) job\(s\)/.exec(l);
    const probe = JSON.parse(/bench-probe (\{.*\})/.exec(l)?.[1] ?? 'null');
    // RUMEDBENCH_BENCH_QUERIES=1: the worker's queries by their first words.
    if (probe?.by) console.error(`queries of one worker: ${JSON.stringify(probe.by, null, 1)}`);
    return {
      requests: Number(end?.[1] ?? 0),
      jobs: Number(end?.[2] ?? 0),
      slot: Number(/wait for a request slot: median ([\d.]+) ms/.exec(l)?.[1] ?? Number.NaN),
      slot90: Number(/wait for a request slot: .*90th percentile ([\d.]+) ms/.exec(l)?.[1] ?? Number.NaN),
      cpu: probe ? probe.user_ms + probe.system_ms : Number.NaN,
      sys: probe ? probe.system_ms : Number.NaN,
      queries: probe?.queries ?? Number.NaN,
      // The process's life outside its requests (#64, fixed costs): wall ms and CPU ms from its start to its first
      // model request, and from its last answer to its exit.
      ...lifeOf(probe?.phases),
    };
  });
  const sum = (k) => each.reduce((a, w) => a + w[k], 0);
  const requests = r[0].n;
  return {
    workers: n,
    load,
    requests,
    span_s: r[0].span,
    rps: requests / r[0].span,
    wall_s: wall,
    wall_rps: requests / wall,
    queue_ms: perJob,
    // Per answered request: each worker's own (the median of the workers), the workers' together, PostgreSQL's, the
    // model server's.
    worker_cpu_ms: median(each.filter((w) => w.requests > 0).map((w) => w.cpu / w.requests)),
    // Of it, the kernel's (system time: socket writes and reads, on loopback the peer's receive path too).
    worker_sys_ms: median(each.filter((w) => w.requests > 0).map((w) => w.sys / w.requests)),
    workers_cpu_ms: sum('cpu') / requests,
    pg_cpu_ms: pgMs === undefined ? Number.NaN : pgMs / requests,
    server_cpu_ms: serverMs / requests,
    queries_per_request: sum('queries') / requests,
    queries_per_job: sum('queries') / sum('jobs'),
    slot_ms: median(each.map((w) => w.slot).filter((x) => !Number.isNaN(x))),
    slot90_ms: median(each.map((w) => w.slot90).filter((x) => !Number.isNaN(x))),
    ...Object.fromEntries(
      ['start_ms', 'start_cpu', 'tail_ms', 'tail_cpu'].map((k) => [
        k,
        median(each.map((w) => w[k]).filter((x) => !Number.isNaN(x))),
      ]),
    ),
  };
}

/** A worker's start (to its first model request) and tail (its last answer to its exit), in wall ms and CPU ms. */
function lifeOf(p) {
  if (!p?.firstRequest || !p.lastAnswer || !p.exit)
    return { start_ms: Number.NaN, start_cpu: Number.NaN, tail_ms: Number.NaN, tail_cpu: Number.NaN };
  return {
    start_ms: p.firstRequest.ms,
    start_cpu: p.firstRequest.cpu,
    tail_ms: p.exit.ms - p.lastAnswer.ms,
    tail_cpu: p.exit.cpu - p.lastAnswer.cpu,
  };
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
const loads = [];
/** results[label][n]: one row per run. */
const results = Object.fromEntries(
  builds.map((b) => [b.label, Object.fromEntries(counts.map((n) => [n, []]))]),
);
for (let run = 0; run < runs; run++) {
  const order = run % 2 ? [...builds].reverse() : builds;
  // The worker counts alternate too: 1, 2, 4 then 4, 2, 1: a load that drifts during a run weighs on each alike.
  for (const n of run % 2 ? [...counts].reverse() : counts)
    for (const b of order) {
      const row = await once(b.cli, n);
      loads.push(`${n}w ${row.load.toFixed(1)}`);
      results[b.label][n].push(row);
      console.error(
        `run ${run + 1}/${runs} ${b.label} ${n} worker(s), load ${row.load.toFixed(1)}: ${row.rps.toFixed(1)} req/s by span, ${row.wall_rps.toFixed(1)} by wall, queue ms ${row.queue_ms.map((x) => x.toFixed(1)).join(', ')}; CPU ms/request: worker ${row.worker_cpu_ms.toFixed(2)} (system ${row.worker_sys_ms.toFixed(2)}), PostgreSQL ${row.pg_cpu_ms.toFixed(2)}, model server ${row.server_cpu_ms.toFixed(2)}; queries ${row.queries_per_request.toFixed(2)}/request, ${row.queries_per_job.toFixed(1)}/job; slot wait ${row.slot_ms.toFixed(1)} ms (90th percentile ${row.slot90_ms.toFixed(1)}); a worker's start to its first request ${row.start_ms.toFixed(0)} ms (CPU ${row.start_cpu.toFixed(0)} ms), last answer to exit ${row.tail_ms.toFixed(0)} ms (CPU ${row.tail_cpu.toFixed(0)} ms)`,
      );
    }
}
server.kill();

console.log(
  `${runs} run(s), alternating; each worker --jobs ${jobs} --concurrency ${concurrency}, max_in_flight ${maxInFlight}; load average (1 min) at the start of each: ${loads.join(', ')}`,
);
console.log(
  'build   workers  requests  span s  req/s (span)  wall s  req/s (wall)  queue ms per job (worst worker median)',
);
for (const b of builds) {
  const m = {};
  for (const n of counts) {
    const rs = results[b.label][n];
    m[n] = {
      span: median(rs.map((r) => r.span_s)),
      rps: median(rs.map((r) => r.rps)),
      wall: median(rs.map((r) => r.wall_s)),
      wall_rps: median(rs.map((r) => r.wall_rps)),
      queue: median(rs.map((r) => Math.max(...r.queue_ms))),
    };
    console.log(
      `${b.label.padEnd(6)}  ${String(n).padStart(7)}  ${String(rs[0].requests).padStart(8)}  ${m[n].span.toFixed(2).padStart(6)}  ${m[n].rps.toFixed(1).padStart(12)}  ${m[n].wall.toFixed(2).padStart(6)}  ${m[n].wall_rps.toFixed(1).padStart(12)}  ${m[n].queue.toFixed(1)}`,
    );
  }
  console.log(
    `${b.label}: the profile, medians of ${runs} run(s): CPU ms per answered request (one worker process / all workers / PostgreSQL's backends / model server), database round trips per request and per job, a request's wait for a slot, a worker's start to its first request and its last answer to its exit (wall ms, CPU ms)`,
  );
  console.log(
    'workers  worker CPU  workers CPU  PostgreSQL CPU  server CPU  queries/req  queries/job  slot wait ms  p90 ms  start ms (CPU)  tail ms (CPU)',
  );
  for (const n of counts) {
    const rs = results[b.label][n];
    const md = (k, d = 2) => median(rs.map((r) => r[k])).toFixed(d);
    console.log(
      `${String(n).padStart(7)}  ${md('worker_cpu_ms').padStart(10)}  ${md('workers_cpu_ms').padStart(11)}  ${md('pg_cpu_ms').padStart(14)}  ${md('server_cpu_ms').padStart(10)}  ${md('queries_per_request').padStart(11)}  ${md('queries_per_job', 1).padStart(11)}  ${md('slot_ms', 1).padStart(12)}  ${md('slot90_ms', 1).padStart(6)}  ${`${md('start_ms', 0)} (${md('start_cpu', 0)})`.padStart(14)}  ${`${md('tail_ms', 0)} (${md('tail_cpu', 0)})`.padStart(13)}`,
    );
  }
  // The ratio of each run's most workers to the same run's fewest, then the median: a run's load is shared by both.
  const ratio = (k) => median(results[b.label][most].map((r, i) => r[k] / results[b.label][fewest][i][k]));
  console.log(
    `${b.label}: ${fewest} → ${most} workers: ${ratio('rps').toFixed(2)}× by the answers' span (target ≥ 3.5× for 1 → 4), ${ratio('wall_rps').toFixed(2)}× by wall time; queue time per job at most ${Math.max(...counts.map((n) => m[n].queue)).toFixed(1)} ms of the workers' medians (target < 20 ms)`,
  );
}
