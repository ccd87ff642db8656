// Benchmark (issue #17): the order probe (Oren et al., 2023) on RuMedDaNet's test set against a loopback vLLM-like
// server, beside one `llm --mode loglik` run over the same split: requests sent and wall time, as ratios. Target: the
// probe within 3× the run's wall time. Each command is the built CLI in its own process; medians of 3 runs each.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
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
const server = spawn(process.execPath, [join(root, 'bench', 'loglik-server.js')], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
const port = await new Promise((r) => server.stdout.once('data', (d) => r(Number(String(d).trim()))));
const url = `http://127.0.0.1:${port}/v1`;
const stats = async () => (await (await fetch(`http://127.0.0.1:${port}/stats`)).json()).requests;
const common = ['--base-url', url, '--model', 'bench', '--data', dataDir, '--tasks', 'RuMedDaNet', '--quiet'];
const time = async (argv) => {
  const before = await stats();
  const t0 = performance.now();
  execFileSync(process.execPath, [cli, ...argv], { stdio: ['ignore', 'ignore', 'inherit'] });
  const seconds = (performance.now() - t0) / 1000;
  return { seconds, requests: (await stats()) - before - 0 };
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const runs = { loglik: [], order: [] };
for (let i = 0; i < 3; i++) {
  runs.loglik.push(
    await time([
      'llm',
      ...common,
      '--mode',
      'loglik',
      '--bootstrap',
      '0',
      '--out',
      mkdtempSync(join(tmpdir(), 'rmb-b-')),
    ]),
  );
  runs.order.push(await time(['contamination', ...common, '--probes', 'order']));
}
const [l, o] = [runs.loglik, runs.order].map((r) => ({
  seconds: median(r.map((x) => x.seconds)),
  requests: median(r.map((x) => x.requests)),
}));
console.log('RuMedDaNet test (256 items), loopback vLLM-like server answering at once; medians of 3');
console.log(`  llm --mode loglik:             ${l.requests} requests, ${l.seconds.toFixed(2)} s`);
console.log(
  `  contamination --probes order:  ${o.requests} requests, ${o.seconds.toFixed(2)} s (20 shards × 26 orders)`,
);
console.log(
  `  ratio: requests ${(o.requests / l.requests).toFixed(2)}×, wall time ${(o.seconds / l.seconds).toFixed(2)}× (target ≤ 3×)`,
);
server.kill();
