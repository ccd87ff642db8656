// Benchmark: a four-system report (upstream's Feature-based, BiLSTM, Naive and Human predictions over the five
// public test sets, 1000 bootstrap resamples, three paired comparisons) built by a fresh `rumedbench report`
// process, as a user runs it, beside a fresh `rumedbench eval` of one system and Node's own start-up, measured
// side by side in one run. Prints medians and the HTML size.
// Targets (issue #9): under 2 s from a fresh process; the HTML under 2 MB.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const shared = resolve(root, '..', 'shared', 'rumedbench');
const dataDir = process.env.RUMEDBENCH_DATA || join(shared, 'data');
const refs = ['linear_models', 'bilstm', 'naive', 'human'].map((n) =>
  join(shared, 'reference-predictions', n),
);
if (!existsSync(dataDir) || !refs.every((r) => existsSync(r))) {
  console.log(`skipped: RuMedBench data or reference predictions not found (${dataDir})`);
  process.exit(0);
}

const RUNS = Number(process.env.BENCH_RUNS || 7);
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const cli = join(root, 'dist/bin/rumedbench.js');
const env = { ...process.env, RUMEDBENCH_DATA: dataDir };
const time = (args) => {
  const t0 = performance.now();
  execFileSync(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'ignore'] });
  return performance.now() - t0;
};

const out = join(mkdtempSync(join(tmpdir(), 'rumedbench-bench-report-')), 'report.html');
const report = [cli, 'report', ...refs, '--file-gold', '--reference', '--out', out];
const times = { report: [], svgs: [], eval: [], node: [] };
// Interleaved, so that a noisy neighbour slows every kind alike.
for (let i = 0; i < RUNS; i++) {
  times.report.push(time(report));
  times.svgs.push(time([...report, '--svg-dir', join(dirname(out), 'svg')]));
  times.eval.push(time([cli, 'eval', refs[0], '--bootstrap', '1000', '--json']));
  times.node.push(time(['-e', '']));
}
const size = statSync(out).size;
const fmt = (ms) => `${ms.toFixed(0)} ms`;
const m = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
console.log(
  `rumedbench report, 4 systems x 5 public test sets, 1000 resamples, 3 comparisons; ${RUNS} runs, medians`,
);
console.log(
  `  report (HTML, 12 charts):            ${fmt(m.report)}  (min ${fmt(Math.min(...times.report))}, max ${fmt(Math.max(...times.report))})`,
);
console.log(`  report + --svg-dir:                  ${fmt(m.svgs)}`);
console.log(
  `  eval of one system (for scale):      ${fmt(m.eval)}   report/eval = ${(m.report / m.eval).toFixed(2)}x`,
);
console.log(`  node start-up alone:                 ${fmt(m.node)}`);
console.log(`  HTML size:                           ${(size / 1024).toFixed(0)} KiB`);
console.log(
  `  targets: under 2000 ms -> ${m.report < 2000 ? 'met' : 'NOT met'}; under 2 MiB -> ${size < 2 * 1024 * 1024 ? 'met' : 'NOT met'}`,
);
