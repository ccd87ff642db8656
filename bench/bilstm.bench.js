// `npm run bench:bilstm`: our BiLSTM classifier beside PyTorch running upstream's recipe
// (bench/bilstm_reference.py, 2 threads), on one task (RuMedDaNet by default), side by side in one run: seconds
// per epoch, epochs run, peak RSS of each process. On this shared 2-core machine a full epoch may not fit: set
// BENCH_BILSTM_LIMIT=N to train both sides on the first N train (and dev) records, BENCH_BILSTM_EPOCHS=E to cap
// the epochs. The PyTorch side is skipped, with a message, where no python with torch is found
// (BENCH_TORCH_PYTHON names one).
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dataDir = process.env.RUMEDBENCH_DATA ?? join(root, 'data');
const task = process.env.BENCH_BILSTM_TASK ?? 'RuMedDaNet';
const limit = process.env.BENCH_BILSTM_LIMIT ?? '0';
const epochs = process.env.BENCH_BILSTM_EPOCHS ?? '50';
// Both sides run this many threads (ours: 1 or 2).
const threads = process.env.BENCH_BILSTM_THREADS ?? '2';

function findTorch() {
  for (const py of [process.env.BENCH_TORCH_PYTHON, '/tmp/torch-venv/bin/python', 'python3']) {
    if (py && spawnSync(py, ['-c', 'import torch'], { encoding: 'utf8' }).status === 0) return py;
  }
  return undefined;
}

function run(cmd, args) {
  const t0 = performance.now();
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed:\n${r.stderr}`);
  const lines = r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const epochsRun = lines.filter((l) => l.epoch !== undefined);
  const last = lines[lines.length - 1];
  const perEpoch = epochsRun.map((e) => e.seconds);
  const cpu = epochsRun.map((e) => e.cpu_seconds);
  return {
    epochs: epochsRun.length,
    seconds_per_epoch: perEpoch.reduce((a, b) => a + b, 0) / Math.max(1, perEpoch.length),
    per_epoch: perEpoch,
    cpu_per_epoch: cpu.reduce((a, b) => a + b, 0) / Math.max(1, cpu.length),
    dev_loss: epochsRun.map((e) => e.dev_loss),
    peak_rss_mb: last.peak_rss_mb,
    vocab: last.vocab,
    wall_s: (performance.now() - t0) / 1000,
  };
}

const py = findTorch();
if (!py) console.log('PyTorch side skipped: no python with torch (set BENCH_TORCH_PYTHON)');
const ours = run(process.execPath, [
  join(root, 'bench', 'bilstm-task.js'),
  dataDir,
  task,
  limit,
  epochs,
  threads,
]);
const theirs = py
  ? run(py, [
      join(root, 'bench', 'bilstm_reference.py'),
      'train',
      dataDir,
      task,
      '--limit',
      limit,
      '--epochs',
      epochs,
      '--threads',
      threads,
    ])
  : undefined;
const f = (x) => (x === undefined ? '–' : x.toFixed(1));
console.log(
  `${task}, ${limit === '0' ? 'all' : `the first ${limit}`} train/dev records, at most ${epochs} epoch(s):`,
);
console.log('| side | vocabulary | epochs | wall s/epoch | CPU s/epoch | peak RSS MB | dev loss per epoch |');
console.log('|---|---|---|---|---|---|---|');
for (const [name, r] of [
  [`rumedbench ${threads} thread${threads === '1' ? '' : 's'}`, ours],
  [`PyTorch ${threads} threads`, theirs],
])
  if (r)
    console.log(
      `| ${name} | ${r.vocab} | ${r.epochs} | ${f(r.seconds_per_epoch)} | ${f(r.cpu_per_epoch)} | ${f(r.peak_rss_mb)} | ${r.dev_loss.map((d) => d.toFixed(4)).join(', ')} |`,
    );
if (theirs)
  console.log(
    `ours/PyTorch: wall time per epoch ${(ours.seconds_per_epoch / theirs.seconds_per_epoch).toFixed(2)}×, CPU time ${(ours.cpu_per_epoch / theirs.cpu_per_epoch).toFixed(2)}×, peak RSS ${(ours.peak_rss_mb / theirs.peak_rss_mb).toFixed(2)}×`,
  );
