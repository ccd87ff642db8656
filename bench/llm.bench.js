// Benchmark (issue #4): the LLM harness against a zero-latency local server, concurrency 64, over the five public
// test sets (3,608 requests a round), three rounds with different seeds (so every request is new). Target: at least
// 1,000 requests per second with flat memory.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { OVERALL_TASKS, runLlm } from '../dist/index.js';
import { OpenAIProvider } from '../dist/llm/openai.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dataDir = process.env.RUMEDBENCH_DATA || resolve(root, '..', 'shared', 'rumedbench', 'data');
if (!existsSync(join(dataDir, 'RuMedDaNet', 'test_v1.jsonl'))) {
  console.log(`skipped: RuMedBench data not found at ${dataDir}`);
  process.exit(0);
}
const server = spawn(process.execPath, [join(root, 'bench', 'zero-latency-server.js')], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
const port = await new Promise((r) => server.stdout.once('data', (d) => r(Number(String(d).trim()))));
const provider = new OpenAIProvider({
  baseUrl: `http://127.0.0.1:${port}/v1`,
  model: 'bench',
  maxRetries: 0,
});
const rss = () => process.memoryUsage().rss / 2 ** 20;
let peak = rss();
const sampler = setInterval(() => {
  peak = Math.max(peak, rss());
}, 50);
console.log('round  requests  requests/s  RSS after (MiB)  peak RSS (MiB)');
for (const seed of [0, 1, 2]) {
  const outDir = mkdtempSync(join(tmpdir(), 'rumedbench-bench-llm-'));
  const r = await runLlm({
    provider,
    tasks: OVERALL_TASKS,
    dataDir,
    outDir,
    splits: 'test',
    mode: 'generate',
    shots: 0,
    seed,
    params: { temperature: 0, maxTokens: 16, seed },
    concurrency: 64,
    bootstrap: 0,
  });
  const req = r.summary.llm.requests;
  global.gc?.();
  console.log(
    `${String(seed + 1).padStart(5)}  ${String(req.sent_this_run).padStart(8)}  ${req.throughput_rps.toFixed(0).padStart(10)}  ${rss().toFixed(0).padStart(15)}  ${peak.toFixed(0).padStart(14)}`,
  );
}
clearInterval(sampler);
server.kill();
