// Benchmark: recomputing a board's rank intervals and groups (issues #26, #44). BENCH_ENTRIES (200) entries on the
// five public test sets (3,608 items), each entry right on each item as the Rasch model says (tags kept or garbled on
// RuMedNER), 1,000 paired bootstrap replicates, pairs tested for the groups. Measured as the server runs it: the
// counts as the database keeps them (deflated, base64), decoded and ranked in scoring workers.
// Measured: a full recomputation (every replicate row drawn, as on a first start) and one upload (the board plus one
// entry: its rows drawn, every interval recomputed from the kept rows), and a restart (a new scorer reading the rows
// kept in an SQLite database). BENCH_THREADS=1,2 (2); BENCH_BEFORE=/path to
// another checkout whose dist/ is measured first in the same run (BENCH_BEFORE_RUNS runs: at 5,000 entries a run of
// the old code takes minutes), with the ratios. Targets (#44): 5,000 entries, an upload within 2 s, a full ranking
// within 10 s after a restart, on 2 cores. Prints medians of BENCH_RUNS runs (5).

import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dataDir = process.env.RUMEDBENCH_DATA || resolve(root, '..', 'shared', 'rumedbench', 'data');
if (!existsSync(dataDir)) {
  console.log(`skipped: RuMedBench data not found (${dataDir})`);
  process.exit(0);
}
const { encodeItemStats } = await import(join(root, 'dist/server/boards/ranking.js'));
const { ReferenceLoader } = await import(join(root, 'dist/scoring/reference.js'));
const { getTask } = await import(join(root, 'dist/tasks/registry.js'));
const { createRng } = await import(join(root, 'dist/metrics/rng.js'));

const ENTRIES = Number(process.env.BENCH_ENTRIES || 200);
const RUNS = Number(process.env.BENCH_RUNS || 5);
const TASKS = ['RuMedTop3', 'RuMedSymptomRec', 'RuMedDaNet', 'RuMedNLI', 'RuMedNER'];
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const refs = new ReferenceLoader(dataDir);
const records = {};
for (const t of TASKS) records[t] = (await refs.load(getTask(t), 'test')).records;
const labels = (t) => [...new Set(records[t].map((r) => (Array.isArray(r.gold) ? r.gold[0] : r.gold)))];
const rng = createRng(26);
const entries = [];
// Items differ in difficulty and entries in ability (the Rasch model: P(right) = 1 / (1 + e^(difficulty −
// ability))), so that entries agree on easy items and on hard ones, as real systems do.
const difficulty = Object.fromEntries(TASKS.map((t) => [t, records[t].map(() => 4 * rng.next() - 2)]));
for (let e = 0; e < ENTRIES; e++) {
  const ability = 3 * rng.next() - 1.5;
  const tasks = TASKS.map((name) => {
    const task = getTask(name);
    const pool = labels(name);
    const items = records[name].map((r, i) => {
      const right = rng.next() < 1 / (1 + Math.exp(difficulty[name][i] - ability));
      let prediction;
      if (task.kind === 'tagging') prediction = r.gold.map((tag) => (right || rng.next() < 0.8 ? tag : 'O'));
      else if (task.kind === 'ranking')
        prediction = right ? [r.gold, pool[0], pool[1]] : [pool[rng.int(pool.length)], r.gold, pool[2]];
      else prediction = right ? r.gold : pool.find((l) => l !== r.gold);
      return { id: r.id, gold: r.gold, prediction };
    });
    return { task, items };
  });
  entries.push({
    id: `entry-${e}`,
    stats: encodeItemStats({ source: 'bench', split: 'test', tasks, issues: [] }),
    inTasks: true,
    inOverall: true,
  });
}
const job = {
  board: 'public',
  tasks: TASKS,
  overall: TASKS,
  split: 'test',
  resamples: 1000,
  seed: 0,
  alpha: 0.05,
  entries,
};
/** The n-th upload after the board: a new entry, another entry's counts of one task swapped in so that it differs. */
const uploadOf = (n) => {
  const a = entries[(7 * n + 1) % entries.length];
  const b = entries[(11 * n + 3) % entries.length];
  return { ...a, id: `upload-${n}`, stats: { ...a.stats, RuMedDaNet: b.stats.RuMedDaNet } };
};

const THREADS = (process.env.BENCH_THREADS || '2').split(',').map(Number);
const BEFORE = process.env.BENCH_BEFORE; // another build's root (its dist/), measured first in the same run
const BEFORE_RUNS = Number(process.env.BENCH_BEFORE_RUNS || RUNS);
const builds = [
  ...(BEFORE ? [{ label: 'before', root: resolve(BEFORE) }] : []),
  { label: BEFORE ? 'after' : 'this', root },
];
const TIMEOUT_MS = Number(process.env.BENCH_TIMEOUT_S || 0) * 1000;
const fmt = (ms) => `${(ms / 1000).toFixed(2)} s`;
console.log(
  `${ENTRIES} entries × ${TASKS.length} tasks, 1000 replicates; ${availableParallelism()} cores here; medians of ${RUNS} runs${BEFORE ? ` (${BEFORE_RUNS} before)` : ''}`,
);
const results = {};
for (const threads of THREADS) {
  for (const build of builds) {
    const { Scorer } = await import(join(build.root, 'dist/server/scorer.js'));
    const runs = build.label === 'before' ? BEFORE_RUNS : RUNS;
    const scorer = new Scorer({ dataDir, threads });
    await scorer.rank({ ...job, entries: entries.slice(0, 2) }); // warm: gold loaded, code compiled
    // A full recomputation: every row drawn again (the kept rows forgotten, as after a restart).
    const full = [];
    let last;
    let over = false;
    for (let i = 0; i < runs && !over; i++) {
      scorer.rows?.clear();
      const t0 = performance.now();
      // BENCH_TIMEOUT_S (none): a run past it is stopped (its threads ended) and reported as "> that".
      let timer;
      const limit = new Promise((r) => {
        if (TIMEOUT_MS > 0) timer = setTimeout(() => r(null), TIMEOUT_MS);
      });
      const result = await Promise.race([scorer.rank(job), limit]);
      clearTimeout(timer);
      if (result === null) {
        over = true;
        break;
      }
      last = result;
      full.push(performance.now() - t0);
    }
    if (over) {
      await Promise.all([scorer.rankPool.destroy(), scorer.pool.destroy()]);
      results[`${build.label}/${threads}`] = { full: TIMEOUT_MS, upload: TIMEOUT_MS, over: true };
      console.log(`${build.label}, ${threads} thread(s): full > ${fmt(TIMEOUT_MS)} (stopped there)`);
      continue;
    }
    // One upload: the board as above plus one new entry (the kept rows of the others reused where kept).
    const upload = [];
    let board = job;
    // A build without kept rows (scorer.rows) ranks an upload as a full recomputation of one more entry: with
    // BENCH_BEFORE_UPLOADS=0 that is not run again (at 5,000 entries a run takes minutes) and its full time is shown.
    const uploads = scorer.rows || process.env.BENCH_BEFORE_UPLOADS !== '0' ? runs : 0;
    for (let i = 0; i < uploads; i++) {
      board = { ...board, entries: [...board.entries, uploadOf(i)] };
      const t0 = performance.now();
      last = await scorer.rank(board);
      upload.push(performance.now() - t0);
    }
    // The incremental ranking is the full one: the same board, every row drawn again.
    let same = '';
    if (scorer.rows) {
      scorer.rows.clear();
      const again = await scorer.rank(board);
      same =
        JSON.stringify(again) === JSON.stringify(last)
          ? '; equals a full recomputation'
          : '; DIFFERS from a full recomputation';
    }
    await scorer.close();
    // A restart: a new process's scorer (no rows in memory) on a database whose replicate rows were kept (SQLite,
    // migrated), reading them instead of drawing them; timed from the first query to the ranking.
    let restart = '';
    if (scorer.rows) {
      const [{ openDatabase }, { databaseRowStore }] = await Promise.all([
        import(join(build.root, 'dist/server/db/connect.js')),
        import(join(build.root, 'dist/server/boards/service.js')),
      ]);
      const dir = mkdtempSync(join(tmpdir(), 'rumedbench-rank-bench-'));
      const db = await openDatabase(join(dir, 'board.db'));
      const store = databaseRowStore(db.db, (m) => console.log(m));
      const first = new Scorer({ dataDir, threads });
      await first.rank(board, store);
      await first.rowsSaved();
      await first.close();
      const times = [];
      for (let i = 0; i < runs; i++) {
        const fresh = new Scorer({ dataDir, threads });
        await fresh.rank({ ...job, entries: entries.slice(0, 2) }, store); // threads started, as a server's are
        const t0 = performance.now();
        const again = await fresh.rank(board, store);
        times.push(performance.now() - t0);
        await fresh.close();
        if (JSON.stringify(again) !== JSON.stringify(last)) restart = '; restart DIFFERS';
      }
      await db.close();
      rmSync(dir, { recursive: true, force: true });
      restart = `; restart from kept rows ${fmt(median(times))} (min ${fmt(Math.min(...times))})${restart}`;
    }
    const groups = new Set(Object.values(last.overall.entries).map((c) => c.group)).size;
    if (upload.length === 0) upload.push(...full);
    results[`${build.label}/${threads}`] = { full: median(full), upload: median(upload) };
    console.log(
      `${build.label}, ${threads} thread(s): full ${fmt(median(full))} (min ${fmt(Math.min(...full))}); one upload ${fmt(median(upload))} (min ${fmt(Math.min(...upload))}); overall: ${groups} distinct groups, MDE ${last.overall.mde.toFixed(2)} points${same}${restart}`,
    );
  }
  const [b, a] = [results[`before/${threads}`], results[`after/${threads}`]];
  const gt = b?.over ? '> ' : '';
  if (b && a)
    console.log(
      `  ratio before/after, ${threads} thread(s): full ${gt}×${(b.full / a.full).toFixed(1)}, one upload ${gt}×${(b.upload / a.upload).toFixed(1)}`,
    );
}
