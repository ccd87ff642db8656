// Benchmark: score the five public test sets (upstream's Feature-based predictions) with 1000 bootstrap
// resamples, as a user runs it (a fresh `rumedbench eval` process) and in process (warm). Prints medians.
// Target (issue #2): under 1 s wall time for the CLI on a 2-core machine.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { evaluateSubmission } from '../dist/index.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const shared = resolve(root, '..', 'shared', 'rumedbench');
const dataDir = process.env.RUMEDBENCH_DATA || join(shared, 'data');
const submission = join(shared, 'reference-predictions', 'linear_models');
if (!existsSync(dataDir) || !existsSync(submission)) {
  console.log(`skipped: RuMedBench data or reference predictions not found (${dataDir}, ${submission})`);
  process.exit(0);
}

const RUNS = Number(process.env.BENCH_RUNS || 7);
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// Side by side, alternating, so that the machine's noise falls on all three alike: a bare Node start, the smallest
// command (`version`) and the five public test sets scored by a fresh `eval` process.
const timed = (args) => {
  const t0 = performance.now();
  execFileSync(process.execPath, args, {
    env: { ...process.env, RUMEDBENCH_DATA: dataDir },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return performance.now() - t0;
};
const bare = [];
const version = [];
const cli = [];
for (let i = 0; i < RUNS; i++) {
  bare.push(timed(['-e', '0']));
  version.push(timed([join(root, 'dist/cli/main.js'), 'version']));
  cli.push(timed([join(root, 'dist/cli/main.js'), 'eval', submission, '--bootstrap', '1000', '--json']));
}

const inProcess = [];
const noBootstrap = [];
for (let i = 0; i < RUNS; i++) {
  let t0 = performance.now();
  const r = await evaluateSubmission(submission, { dataDir, bootstrap: 1000 });
  inProcess.push(performance.now() - t0);
  if (r.overall === null) throw new Error('benchmark submission did not score');
  t0 = performance.now();
  await evaluateSubmission(submission, { dataDir, bootstrap: 0 });
  noBootstrap.push(performance.now() - t0);
}

const fmt = (ms) => `${ms.toFixed(0)} ms`;
console.log(
  `rumedbench eval, 5 public test sets (3608 items), 1000 bootstrap resamples; ${RUNS} runs, medians`,
);
console.log(
  `  CLI process, wall time:            ${fmt(median(cli))}  (min ${fmt(Math.min(...cli))}, max ${fmt(Math.max(...cli))})`,
);
console.log(`  in process, with bootstrap:        ${fmt(median(inProcess))}`);
console.log(`  in process, no bootstrap:          ${fmt(median(noBootstrap))}`);
console.log(`  target: CLI under 1000 ms -> ${median(cli) < 1000 ? 'met' : 'NOT met'}`);
const ratio = (xs) => median(xs) / median(bare);
console.log(`start-up, side by side (${RUNS} runs each, medians):`);
console.log(`  node -e 0:                         ${fmt(median(bare))}`);
console.log(
  `  rumedbench version:                ${fmt(median(version))}  = ${ratio(version).toFixed(2)}x a bare Node start (target 2x: ${ratio(version) <= 2 ? 'met' : 'NOT met'})`,
);
console.log(
  `  rumedbench eval (5 sets, 1000):    ${fmt(median(cli))}  = ${ratio(cli).toFixed(2)}x a bare Node start (target 5x: ${ratio(cli) <= 5 ? 'met' : 'NOT met'})`,
);
