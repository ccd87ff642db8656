// The faithfulness matrix's report (issue #61, item 2): `node bench/bilstm-faithful-report.js [OUT_ROOT]` reads
// OUT_ROOT/<Task>/ as `FAITHFUL_OUT=OUT_ROOT/<Task> bash bench/bilstm-faithful.sh <Task> SEEDS` leaves it (default
// .bench-out/faithful) and prints, per task, each side's seeds (epochs, minutes, CPU seconds per epoch where the log
// has them, the test score `rumedbench eval` gives), PyTorch's min-max spread, whether each of ours lies within it,
// and each side's mean ± sd; then the overall that `rumedbench eval` computes for each of our seeds over the four
// tasks we train plus upstream's own BiLSTM RuMedNLI predictions, against the paper's 53.87. A side, seed or task
// not finished is named as such, never guessed. Scores come from the repository's built CLI (dist/, `npm run build`).
// Environment: RUMEDBENCH_DATA (the data folder the scores are computed against), RUMEDBENCH_REFERENCE (upstream's
// prediction files; else reference-predictions/ in or beside the data folder, else ../shared/rumedbench/).
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const shared = resolve(root, '..', 'shared', 'rumedbench');
const outRoot = resolve(process.argv[2] ?? join(root, '.bench-out', 'faithful'));
const dataDir = process.env.RUMEDBENCH_DATA || join(shared, 'data');
const referenceDir =
  process.env.RUMEDBENCH_REFERENCE ||
  [
    join(dataDir, 'reference-predictions'),
    join(dataDir, '..', 'reference-predictions'),
    join(shared, 'reference-predictions'),
  ].find((d) => existsSync(d));
const cli = join(root, 'dist', 'bin', 'rumedbench.js');
/** The tasks we train, in the paper's order; RuMedNLI's train file is not public, so its score is upstream's own. */
const TRAINED = ['RuMedTop3', 'RuMedSymptomRec', 'RuMedDaNet', 'RuMedNER'];
const PAPER_OVERALL = 53.87;
const BOUND = 1.5;
const SIDES = ['ours', 'torch'];

for (const [what, path, hint] of [
  ['the built CLI', cli, 'run npm run build'],
  ['the data', dataDir, 'set RUMEDBENCH_DATA'],
  ['the matrix', outRoot, 'give OUT_ROOT'],
]) {
  if (!existsSync(path)) {
    console.error(`bilstm-faithful-report: not found: ${what} (${path}; ${hint})`);
    process.exit(2);
  }
}

/** `rumedbench eval DIR --json`: task scores and the overall, or why there are none. */
function evaluate(dir) {
  const r = spawnSync(process.execPath, [cli, 'eval', dir, '--bootstrap', '0', '--json'], {
    encoding: 'utf8',
    env: { ...process.env, RUMEDBENCH_DATA: dataDir },
  });
  if (r.status !== 0)
    return { error: (r.stderr || r.stdout).trim().split('\n').at(-1) ?? `exit ${r.status}` };
  const j = JSON.parse(r.stdout);
  return {
    tasks: Object.fromEntries(Object.entries(j.tasks).map(([t, v]) => [t, v.score])),
    overall: j.overall,
  };
}

const read = (path) => (existsSync(path) ? readFileSync(path, 'utf8') : undefined);
const seedsOf = (n) => `${n} seed${n === 1 ? '' : 's'}`;
const fmt = (x, digits = 2) => (x === undefined || x === null ? '-' : x.toFixed(digits));

/** One side's seed in a task folder: its state, epochs, minutes, CPU seconds per epoch and test score. */
function seedRow(dir, task, side, seed) {
  const log = read(join(dir, `${side}-${seed}.log`));
  const done = read(join(dir, `${side}-${seed}.done`));
  const epochLines =
    side === 'ours'
      ? (log ?? '').split('\n').filter((l) => /: epoch \d+\//.test(l))
      : (log ?? '').split('\n').filter((l) => l.startsWith('{"epoch"'));
  // PyTorch's lines carry its process's CPU time; ours print wall seconds only.
  const cpu = side === 'torch' ? epochLines.map((l) => JSON.parse(l).cpu_seconds) : [];
  const row = { side, seed, epochs: epochLines.length, cpuPerEpoch: cpu.length ? mean(cpu) : undefined };
  if (done === undefined) return { ...row, state: log ? 'running (no result yet)' : 'not started' };
  const [rc, secs] = done.trim().split(/\s+/).map(Number);
  row.minutes = secs / 60;
  if (rc !== 0) return { ...row, state: `failed (exit ${rc}; see ${join(dir, `${side}-${seed}.log`)})` };
  const preds = side === 'ours' ? join(dir, `ours-${seed}`, 'predictions') : join(dir, `torch-${seed}`);
  const e = evaluate(preds);
  if (e.error) return { ...row, state: `unscored: ${e.error}` };
  const score = e.tasks[task];
  return score === undefined
    ? { ...row, state: `unscored: no ${task} in ${preds}` }
    : { ...row, state: 'done', score };
}

function mean(xs) {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}
/** Sample standard deviation (n − 1); undefined under two values. */
function sd(xs) {
  if (xs.length < 2) return undefined;
  const m = mean(xs);
  return Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / (xs.length - 1));
}

// The trained tasks always, so that one not yet started is named; any other task folder too.
const folders = readdirSync(outRoot, { withFileTypes: true })
  .filter((d) => d.isDirectory() && d.name !== 'package')
  .map((d) => d.name);
const tasks = [...new Set([...TRAINED, ...folders])].sort(
  (a, b) => order(a) - order(b) || a.localeCompare(b),
);
function order(task) {
  const i = TRAINED.indexOf(task);
  return i < 0 ? TRAINED.length : i;
}

/** Our finished scores by task and seed, for the overall. */
const ours = new Map();
console.log(`Faithfulness of rumedbench baseline bilstm against PyTorch (upstream's recipe), ${outRoot}`);
console.log('test split, scored by rumedbench eval; "within" = between PyTorch\'s lowest and highest seed');
for (const task of tasks) {
  const dir = join(outRoot, task);
  if (!existsSync(dir)) {
    console.log('');
    console.log(`## ${task}: not run yet (no ${dir})`);
    continue;
  }
  const seeds = [
    ...new Set(
      readdirSync(dir)
        .map((f) => /^(?:ours|torch)-(\d+)(?:\.log|\.done)?$/.exec(f)?.[1])
        .filter((s) => s !== undefined),
    ),
  ].sort((a, b) => Number(a) - Number(b));
  const rows = SIDES.flatMap((side) => seeds.map((seed) => seedRow(dir, task, side, seed)));
  const scores = (side) => rows.filter((r) => r.side === side && r.score !== undefined).map((r) => r.score);
  const torch = scores('torch');
  const lo = torch.length ? Math.min(...torch) : undefined;
  const hi = torch.length ? Math.max(...torch) : undefined;
  console.log('');
  console.log(`## ${task}`);
  console.log("| side | seed | epochs | minutes | CPU s/epoch | test score | within PyTorch's spread |");
  console.log('|---|---|---|---|---|---|---|');
  for (const r of rows) {
    const within =
      r.side !== 'ours' || r.score === undefined
        ? ''
        : torch.length < 2
          ? 'no spread yet'
          : r.score >= lo && r.score <= hi
            ? 'yes'
            : 'no';
    const score = r.score === undefined ? r.state : fmt(r.score);
    console.log(
      `| ${r.side} | ${r.seed} | ${r.epochs} | ${fmt(r.minutes, 1)} | ${fmt(r.cpuPerEpoch, 1)} | ${score} | ${within} |`,
    );
    if (r.side === 'ours' && r.score !== undefined) {
      if (!ours.has(task)) ours.set(task, new Map());
      ours.get(task).set(r.seed, r.score);
    }
  }
  const summary = (side) => {
    const xs = scores(side);
    return xs.length ? `${fmt(mean(xs))} ± ${fmt(sd(xs))} (${seedsOf(xs.length)})` : 'no seed finished';
  };
  console.log(
    `PyTorch's spread: ${torch.length ? `${fmt(lo)}-${fmt(hi)} (${seedsOf(torch.length)})` : 'none yet'}; mean ± sd: ours ${summary('ours')}, PyTorch ${summary('torch')}`,
  );
}

// The overall as `rumedbench eval` computes it: one folder per seed of ours, the four tasks' predictions and
// upstream's RuMedNLI file.
console.log('');
console.log(
  `## Overall (ours per seed, four trained tasks + upstream's own BiLSTM RuMedNLI; paper ${PAPER_OVERALL})`,
);
const nli = referenceDir ? join(referenceDir, 'bilstm', 'RuMedNLI.jsonl') : undefined;
const allSeeds = [...new Set([...ours.values()].flatMap((m) => [...m.keys()]))].sort((a, b) => a - b);
if (!nli || !existsSync(nli)) {
  console.log(
    `no overall: upstream's RuMedNLI predictions not found (${nli ?? 'no reference-predictions folder'}; set RUMEDBENCH_REFERENCE)`,
  );
} else if (allSeeds.length === 0) {
  console.log(`no overall: no seed of ours finished any task (missing: ${TRAINED.join(', ')})`);
} else {
  console.log('| seed | overall | paper | difference | within 1.5 |');
  console.log('|---|---|---|---|---|');
  for (const seed of allSeeds) {
    const missing = TRAINED.filter((t) => !ours.get(t)?.has(seed));
    if (missing.length > 0) {
      console.log(`| ${seed} | missing: ${missing.join(', ')} | ${PAPER_OVERALL} | - | - |`);
      continue;
    }
    const tmp = mkdtempSync(join(tmpdir(), 'rumedbench-faithful-overall-'));
    try {
      for (const t of TRAINED)
        copyFileSync(join(outRoot, t, `ours-${seed}`, 'predictions', `${t}.jsonl`), join(tmp, `${t}.jsonl`));
      copyFileSync(nli, join(tmp, 'RuMedNLI.jsonl'));
      const e = evaluate(tmp);
      if (e.error || e.overall === null) {
        console.log(
          `| ${seed} | unscored: ${e.error ?? 'eval gave no overall'} | ${PAPER_OVERALL} | - | - |`,
        );
        continue;
      }
      const diff = e.overall - PAPER_OVERALL;
      console.log(
        `| ${seed} | ${fmt(e.overall)} | ${PAPER_OVERALL} | ${diff >= 0 ? '+' : ''}${fmt(diff)} | ${Math.abs(diff) <= BOUND ? 'yes' : 'no'} |`,
      );
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
}
