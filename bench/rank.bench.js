// Benchmark: recomputing a board's rank intervals and groups (issue #26). 200 entries on the five public test sets
// (3,608 items), each entry right on each item as the Rasch model says (tags kept or garbled on RuMedNER), 1,000
// paired bootstrap replicates, every pair tested for the groups. Measured as the server runs it: the counts as
// the database keeps them (deflated, base64), decoded and ranked in scoring workers, on 1 thread and on 2.
// Target: under 2 s on 2 cores. Prints medians of BENCH_RUNS runs (5).

import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
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
const { Scorer } = await import(join(root, 'dist/server/scorer.js'));
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
  split: 'test',
  resamples: 1000,
  seed: 0,
  alpha: 0.05,
  entries,
};

console.log(
  `${ENTRIES} entries × ${TASKS.length} tasks, 1000 replicates; ${availableParallelism()} cores here; median of ${RUNS}`,
);
for (const threads of [1, 2]) {
  const scorer = new Scorer({ dataDir, threads });
  await scorer.rank({ ...job, entries: entries.slice(0, 2) }); // warm: gold loaded, code compiled
  const times = [];
  let last;
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    last = await scorer.rank(job);
    times.push(performance.now() - t0);
  }
  await scorer.close();
  const groups = new Set(Object.values(last.overall.entries).map((c) => c.group)).size;
  console.log(
    `${threads} thread(s): ${(median(times) / 1000).toFixed(2)} s (min ${(Math.min(...times) / 1000).toFixed(2)}); overall: ${groups} distinct groups, MDE ${last.overall.mde.toFixed(2)} points`,
  );
}
