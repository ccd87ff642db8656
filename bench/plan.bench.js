// Benchmark (issue #15): `rumedbench plan run` against a loopback OpenAI-compatible server that answers in 20 ms.
// 1. A plan of 8 cells (2 models × 4 seeds, RuMedDaNet's test set, 4 requests in flight each) against the same
//    8 cells run one after another as single `rumedbench llm` commands. Target: the plan at least 4× faster.
// 2. A 1-cell plan (the five public test sets, 3,608 requests) against the same `llm` command alone, 5 runs each,
//    alternating. Target: within 5 % (the plan also writes its summary and report.html).
// Every command is the built CLI in its own process, as a user runs it; medians and ratios from one run.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(root, 'dist', 'bin', 'rumedbench.js');
const dataDir = process.env.RUMEDBENCH_DATA || resolve(root, '..', 'shared', 'rumedbench', 'data');
if (!existsSync(join(dataDir, 'RuMedDaNet', 'test_v1.jsonl'))) {
  console.log(`skipped: RuMedBench data not found at ${dataDir}`);
  process.exit(0);
}
const server = spawn(process.execPath, [join(root, 'bench', 'zero-latency-server.js')], {
  stdio: ['ignore', 'pipe', 'inherit'],
  env: { ...process.env, LATENCY_MS: '20' },
});
const port = await new Promise((r) => server.stdout.once('data', (d) => r(Number(String(d).trim()))));
const url = `http://127.0.0.1:${port}/v1`;
const tmp = () => mkdtempSync(join(tmpdir(), 'rumedbench-bench-plan-'));
const seconds = (argv) => {
  const t0 = performance.now();
  execFileSync(process.execPath, [cli, ...argv], { stdio: ['ignore', 'ignore', 'inherit'] });
  return (performance.now() - t0) / 1000;
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const common = [
  '--tasks',
  'RuMedDaNet',
  '--data',
  dataDir,
  '--concurrency',
  '4',
  '--bootstrap',
  '0',
  '--quiet',
];

function plan(models, seeds, tasks = 'RuMedDaNet') {
  const file = join(tmp(), 'plan.yaml');
  writeFileSync(
    file,
    [
      'name: bench',
      `tasks: [${tasks}]`,
      `data: ${dataDir}`,
      'defaults: {concurrency: 4, bootstrap: 0}',
      'models:',
      ...models.map((m) => `  - {name: ${m}, provider: openai, base_url: "${url}", model: bench}`),
      `matrix: {seed: [${seeds.join(', ')}]}`,
    ].join('\n'),
  );
  return file;
}

// 1. Eight cells.
const models = ['bench-a', 'bench-b'];
const seeds = [0, 1, 2, 3];
let sum = 0;
// The server answers as model "bench" whatever is asked; the two plan models differ by name only.
for (const _ of models)
  for (const seed of seeds)
    sum += seconds([
      'llm',
      '--base-url',
      url,
      '--model',
      'bench',
      '--seed',
      String(seed),
      ...common,
      '--out',
      tmp(),
    ]);
const eight = seconds(['plan', 'run', plan(models, seeds), '--out', tmp(), '--jobs', '8', '--quiet']);
console.log('8 cells (RuMedDaNet test, 256 requests each, 20 ms per answer, 4 in flight per cell)');
console.log(`  8 single llm runs, one after another: ${sum.toFixed(2)} s`);
console.log(`  plan run --jobs 8:                    ${eight.toFixed(2)} s`);
console.log(`  speed-up: ${(sum / eight).toFixed(2)}× (target ≥ 4×)`);

// 2. One cell: the plan's own cost.
const single = [];
const planned = [];
const one = plan(['bench-a'], [0], 'RuMedTop3, RuMedSymptomRec, RuMedDaNet, RuMedNLI, RuMedNER');
const all = ['--tasks', 'RuMedTop3,RuMedSymptomRec,RuMedDaNet,RuMedNLI,RuMedNER'];
for (let i = 0; i < 5; i++) {
  single.push(
    seconds(['llm', '--base-url', url, '--model', 'bench', '--seed', '0', ...common, ...all, '--out', tmp()]),
  );
  planned.push(seconds(['plan', 'run', one, '--out', tmp(), '--quiet']));
}
const [s, p] = [median(single), median(planned)];
console.log('1 cell (five test sets, 3,608 requests), 5 runs each, alternating (medians)');
console.log(
  `  llm alone: ${s.toFixed(3)} s   plan run: ${p.toFixed(3)} s   ratio ${(p / s).toFixed(3)} (target ≤ 1.05)`,
);
server.kill();
