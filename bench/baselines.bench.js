// Benchmark (issue #3): our feature-based baseline against scikit-learn's, side by side in one run, on RuMedDaNet,
// RuMedSymptomRec and RuMedTop3. Each side runs each task in a fresh process and reports the wall time of
// load + fit + predict and its peak memory. scikit-learn runs upstream's configuration with n_jobs=2
// (bench/sklearn_feature_based.py); it is skipped, with a message, where python3-sklearn is absent.
// Our side runs each task BENCH_OURS_RUNS times (default 3), one process after another around scikit-learn's
// single run of it, and counts the median run (time and memory of the same run): a run of ours lasts 2 to 8 s, so a
// second's stall of the shared machine is a sixth of it, while scikit-learn's runs of minutes average such stalls
// out. Every run is printed.
// Targets: at least 15 times faster in total, at most half the peak memory, accuracy within 1.0 point (issue #47:
// at least 40 times faster, at most 0.33 times the memory).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dataDir = process.env.RUMEDBENCH_DATA || resolve(root, '..', 'shared', 'rumedbench', 'data');
if (!existsSync(join(dataDir, 'RuMedTop3', 'train_v1.jsonl'))) {
  console.log(`skipped: RuMedBench data not found at ${dataDir}`);
  process.exit(0);
}
const TASKS = ['RuMedDaNet', 'RuMedSymptomRec', 'RuMedTop3'];
const PAPER = { RuMedDaNet: [51.95], RuMedSymptomRec: [32.05, 49.4], RuMedTop3: [49.76, 72.75] };

function findPython() {
  for (const py of ['/usr/bin/python3', 'python3']) {
    const r = spawnSync(py, ['-c', 'import sklearn; print(sklearn.__version__)'], { encoding: 'utf8' });
    if (r.status === 0) return { py, version: r.stdout.trim() };
  }
  return undefined;
}

const run = (cmd, args) =>
  JSON.parse(
    execFileSync(cmd, args, { encoding: 'utf8', maxBuffer: 16 << 20 })
      .trim()
      .split('\n')
      .pop(),
  );
const python = process.env.BENCH_SKLEARN === '0' ? undefined : findPython();
if (!python)
  console.log('scikit-learn side skipped: no python3 with sklearn (Debian: apt-get install python3-sklearn)');

const OURS_RUNS = Number(process.env.BENCH_OURS_RUNS ?? 3);
if (!Number.isInteger(OURS_RUNS) || OURS_RUNS < 1) {
  console.error(
    `BENCH_OURS_RUNS must be a whole number of runs, 1 or more (got ${process.env.BENCH_OURS_RUNS})`,
  );
  process.exit(2);
}
const rows = [];
for (const task of TASKS) {
  const oursRun = () => run(process.execPath, [join(root, 'bench', 'feature-based-task.js'), dataDir, task]);
  // Before and after scikit-learn's run, so that neither side always follows the other.
  const runs = [oursRun()];
  const theirs = python
    ? run(python.py, [join(root, 'bench', 'sklearn_feature_based.py'), dataDir, task])
    : undefined;
  while (runs.length < OURS_RUNS) runs.push(oursRun());
  const byTime = [...runs].sort((a, b) => a.wall_s - b.wall_s);
  // The middle run; of an even number, the slower of the two middle ones.
  const ours = byTime[byTime.length >> 1];
  rows.push({ task, ours, theirs });
  console.error(
    `${task}: ours ${ours.wall_s.toFixed(1)} s (median of ${runs.map((r) => r.wall_s.toFixed(2)).join(', ')} s; peaks ${runs.map((r) => r.peak_mb.toFixed(0)).join(', ')} MB)${theirs ? `, scikit-learn ${theirs.wall_s.toFixed(1)} s` : ''}`,
  );
}

const f1 = (x) => (x === undefined || x === null ? '–' : x.toFixed(1));
const f2 = (x) => (x === undefined || x === null ? '–' : x.toFixed(2));
const metric = (r) =>
  r
    ? r.hit_at_3 !== null && r.task !== 'RuMedDaNet'
      ? `${f2(r.accuracy)}/${f2(r.hit_at_3)}`
      : f2(r.accuracy)
    : '–';
const lines = [
  `| task | features (ours / sklearn) | time ours | time sklearn | speed-up | peak MB ours | peak MB sklearn | memory ratio | accuracy ours | accuracy sklearn | paper |`,
  '|---|---|---|---|---|---|---|---|---|---|---|',
];
let tOurs = 0;
let tTheirs = 0;
let mOurs = 0;
let mTheirs = 0;
for (const { task, ours, theirs } of rows) {
  tOurs += ours.wall_s;
  mOurs = Math.max(mOurs, ours.peak_mb);
  if (theirs) {
    tTheirs += theirs.wall_s;
    mTheirs = Math.max(mTheirs, theirs.peak_mb);
  }
  lines.push(
    `| ${task} | ${ours.features} / ${theirs?.features ?? '–'} | ${f1(ours.wall_s)} s | ${theirs ? `${f1(theirs.wall_s)} s` : '–'} | ${theirs ? `${f1(theirs.wall_s / ours.wall_s)}×` : '–'} | ${ours.peak_mb.toFixed(0)} | ${theirs ? theirs.peak_mb.toFixed(0) : '–'} | ${theirs ? (ours.peak_mb / theirs.peak_mb).toFixed(2) : '–'} | ${metric({ ...ours, task })} | ${metric(theirs && { ...theirs, task })} | ${PAPER[task].map(f2).join('/')} |`,
  );
}
lines.push(
  `| **total** | | ${f1(tOurs)} s | ${python ? `${f1(tTheirs)} s` : '–'} | ${python ? `**${f1(tTheirs / tOurs)}×**` : '–'} | ${mOurs.toFixed(0)} (max) | ${python ? `${mTheirs.toFixed(0)} (max)` : '–'} | ${python ? (mOurs / mTheirs).toFixed(2) : '–'} | | | |`,
);
console.log(lines.join('\n'));
console.log(
  `\nnode ${process.version}${python ? `, scikit-learn ${python.version}` : ''}, ${new Date().toISOString()}`,
);
if (python) {
  const fast = tTheirs / tOurs >= 15;
  const lean = mOurs <= mTheirs / 2;
  console.log(
    `targets: ≥15× faster ${fast ? 'met' : 'NOT met'}; ≤ half the peak memory ${lean ? 'met' : 'NOT met'}`,
  );
  console.log(
    `issue #47: ≥40× faster ${tTheirs / tOurs >= 40 ? 'met' : 'NOT met'}; ≤0.33× the peak memory ${mOurs <= 0.33 * mTheirs ? 'met' : 'NOT met'}`,
  );
  console.log(
    `(ours: the median of ${OURS_RUNS} fresh runs per task, BENCH_OURS_RUNS; scikit-learn: one run per task)`,
  );
}

// All three tasks in one process, as `rumedbench baseline tfidf` runs them: the peak must stay at the largest task's,
// not their sum (a finished task's model must be garbage before the next one trains).
const together = JSON.parse(
  execFileSync(
    process.execPath,
    [
      join(root, 'bench', 'baselines-together.js'),
      dataDir,
      join(root, '.bench-out', 'baselines-together'),
      ...TASKS,
    ],
    { encoding: 'utf8', maxBuffer: 16 << 20 },
  )
    .trim()
    .split('\n')
    .at(-1),
);
console.log(
  `one process, ${TASKS.join(' + ')}: peak ${together.peak_mb.toFixed(0)} MB (largest task alone ${mOurs.toFixed(0)} MB): ${together.peak_mb <= mOurs * 1.05 ? 'met' : 'NOT met'}`,
);
