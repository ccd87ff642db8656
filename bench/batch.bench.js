// Benchmark (issue #27): a run of about 20,000 requests (the five public test sets, six repeats) sent as one batch
// and sent online, side by side against the same zero-latency server: wall time and peak RSS of each `rumedbench llm`
// process, medians of RUNS alternating runs. The batch run uploads one file, waits, and reads one output file.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dataDir = process.env.RUMEDBENCH_DATA || resolve(root, '..', 'shared', 'rumedbench', 'data');
if (!existsSync(join(dataDir, 'RuMedDaNet', 'test_v1.jsonl'))) {
  console.log(`skipped: RuMedBench data not found at ${dataDir}`);
  process.exit(0);
}
const RUNS = Number(process.env.BENCH_RUNS || 3);
const server = spawn(process.execPath, [join(root, 'bench', 'batch-server.js')], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
const port = await new Promise((r) => server.stdout.once('data', (d) => r(Number(String(d).trim()))));
// Each run's peak resident memory, as the process itself measures it, said on stderr when it exits.
const probe = `data:text/javascript,process.on('exit',()=>process.stderr.write('MAXRSS '+process.resourceUsage().maxRSS+'\\n'))`;

function run(extra) {
  const out = mkdtempSync(join(tmpdir(), 'rumedbench-bench-batch-'));
  const args = [
    '--import',
    probe,
    join(root, 'dist', 'bin', 'rumedbench.js'),
    'llm',
    '--base-url',
    `http://127.0.0.1:${port}/v1`,
    '--model',
    'bench',
    '--data',
    dataDir,
    '--split',
    'test',
    '--repeats',
    '6',
    '--max-tokens',
    '16',
    '--bootstrap',
    '0',
    '--no-progress',
    '--out',
    out,
    ...extra,
  ];
  return new Promise((done, fail) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => {
      err += d;
    });
    child.on('exit', (code) => {
      const ms = performance.now() - t0;
      rmSync(out, { recursive: true, force: true });
      const m = /MAXRSS (\d+)/.exec(err);
      if (code !== 0 || !m) fail(new Error(`exit ${code}: ${err.slice(-2000)}`));
      else
        done({
          s: ms / 1000,
          rssMiB: Number(m[1]) / 1024,
          requests: Number(/(\d+) requests in the run/.exec(err)?.[1]),
        });
    });
  });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const online = [];
const batch = [];
for (let i = 0; i < RUNS; i++) {
  online.push(await run(['--concurrency', '64']));
  batch.push(await run(['--batch', '--batch-poll', '0.05']));
}
server.kill();
const row = (name, xs) =>
  `${name.padEnd(8)} ${String(xs[0].requests).padStart(8)}  ${median(xs.map((x) => x.s))
    .toFixed(2)
    .padStart(7)} s  ${median(xs.map((x) => x.rssMiB))
    .toFixed(0)
    .padStart(6)} MiB`;
console.log(`rumedbench llm, five public test sets × 6 repeats; ${RUNS} alternating runs each, medians`);
console.log('mode     requests      wall   peak RSS');
console.log(row('online', online));
console.log(row('batch', batch));
const ratio = (f) => median(batch.map(f)) / median(online.map(f));
console.log(
  `batch / online: wall ${ratio((x) => x.s).toFixed(2)}×, peak RSS ${ratio((x) => x.rssMiB).toFixed(2)}×`,
);
