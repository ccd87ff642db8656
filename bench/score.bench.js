// Benchmark: score the five public test sets (upstream's Feature-based predictions) with 1000 bootstrap
// resamples, as a user runs it (a fresh `rumedbench eval` process) and in process (warm). Prints medians.
// Targets: under 1 s wall time for the CLI on a 2-core machine (issue #2); a fresh `eval` at most 3x a bare Node
// start, `version` at most 1.3x (issue #47).
// The parsed-data cache (src/data/parsed-cache.ts) lives in a folder of this run's own: `eval` is timed with it
// filled (the usual case: every run after the first on the same data) and, apart, empty (a first run).
// Side by side with another build (say main before a change): RUMEDBENCH_BENCH_BEFORE=/path/to/dist/bin/rumedbench.js.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
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
const before = process.env.RUMEDBENCH_BENCH_BEFORE;
const cacheDir = mkdtempSync(join(tmpdir(), 'rumedbench-bench-cache-'));
process.env.RUMEDBENCH_PARSED_CACHE = cacheDir;
process.on('exit', () => rmSync(cacheDir, { recursive: true, force: true }));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// Side by side, alternating, so that the machine's noise falls on all three alike: a bare Node start, the smallest
// command (`version`) and the five public test sets scored by a fresh `eval` process.
const timed = (args, env = {}) => {
  const t0 = performance.now();
  execFileSync(process.execPath, args, {
    env: { ...process.env, RUMEDBENCH_DATA: dataDir, ...env },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return performance.now() - t0;
};
const evalArgs = (main) => [main, 'eval', submission, '--bootstrap', '1000', '--json'];
const main = join(root, 'dist/bin/rumedbench.js');
// Once, untimed: the cache filled, and both builds' files read once.
timed(evalArgs(main));
if (before) timed(evalArgs(before));
const bare = [];
const version = [];
const cli = [];
const cold = [];
const beforeCli = [];
for (let i = 0; i < RUNS; i++) {
  bare.push(timed(['-e', '0']));
  version.push(timed([main, 'version']));
  cli.push(timed(evalArgs(main)));
  const empty = mkdtempSync(join(tmpdir(), 'rumedbench-bench-empty-'));
  cold.push(timed(evalArgs(main), { RUMEDBENCH_PARSED_CACHE: empty }));
  rmSync(empty, { recursive: true, force: true });
  if (before) beforeCli.push(timed(evalArgs(before)));
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
  `  rumedbench version:                ${fmt(median(version))}  = ${ratio(version).toFixed(2)}x a bare Node start (target 1.3x: ${ratio(version) <= 1.3 ? 'met' : 'NOT met'})`,
);
console.log(
  `  rumedbench eval (5 sets, 1000):    ${fmt(median(cli))}  = ${ratio(cli).toFixed(2)}x a bare Node start (target 3x: ${ratio(cli) <= 3 ? 'met' : 'NOT met'})`,
);
console.log(
  `  the same, parsed-data cache empty: ${fmt(median(cold))}  = ${ratio(cold).toFixed(2)}x (a first run on this data)`,
);
if (before)
  console.log(
    `  eval of ${before}: ${fmt(median(beforeCli))}  = ${ratio(beforeCli).toFixed(2)}x; this build takes ${(median(cli) / median(beforeCli)).toFixed(2)}x its time`,
  );
