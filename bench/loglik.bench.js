// Benchmark (issues #47, #62): a log-likelihood run of RuMedDaNet's test set (256 items) at concurrency 8 against one
// loopback vLLM-like server (bench/loglik-vllm-server.js), by rumedbench (this build, and BENCH_BEFORE_CLI, another
// build's dist/bin/rumedbench.js, where set) and by EleutherAI lm-evaluation-harness 0.4.13 (`local-completions`, the
// server's tokenizer, num_concurrent=8 as ours, every other model argument at lm-eval's default: tokenized_requests
// True, max_length 2048), where LMEVAL_PYTHON names a Python with it (bash bench/lmeval/setup.sh installs one).
// lm-eval runs the task `rumedbench tasks export --format lm-eval` writes, at its best batch size: each of
// BENCH_LMEVAL_BATCH_SIZES (1,4,16,64) is timed once first, and the fastest is the one raced. The prompts are compared
// on the wire: every text lm-eval's completions scored must be one ours scored, and the answers item by item.
// Each run is a fresh process, timed with /usr/bin/time (wall, peak RSS); the systems take turns in each round;
// medians of BENCH_ROUNDS (3) rounds. Our two builds' log-probabilities must be equal. Target: ≥ 5× faster.
// BENCH_LATENCY_MS delays every /v1/completions answer (a forward pass), never the tokenizer's (0 by default).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(root, 'dist', 'bin', 'rumedbench.js');
const before = process.env.BENCH_BEFORE_CLI;
const python =
  process.env.LMEVAL_PYTHON ??
  (existsSync('/tmp/lmeval-venv/bin/python') ? '/tmp/lmeval-venv/bin/python' : undefined);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const dataDir = process.env.RUMEDBENCH_DATA || resolve(root, '..', 'shared', 'rumedbench', 'data');
if (!existsSync(join(dataDir, 'RuMedDaNet', 'test_v1.jsonl'))) {
  console.log(`skipped: RuMedBench data not found at ${dataDir}`);
  process.exit(0);
}
const server = spawn(process.execPath, [join(root, 'bench', 'loglik-vllm-server.js')], {
  stdio: ['ignore', 'pipe', 'inherit'],
  env: process.env,
});
const port = await new Promise((r) => server.stdout.once('data', (d) => r(Number(String(d).trim()))));
/**
 * One question to the server. Asked again once where its kept-alive connection was closed under it: the runs are
 * timed with execFileSync, which blocks this process for the whole run, so a connection can go stale in between.
 */
const ask = async (path, init) => {
  const url = `http://127.0.0.1:${port}${path}`;
  try {
    return await (await fetch(url, init)).json();
  } catch {
    return await (await fetch(url, init)).json();
  }
};
const stats = async () => (await ask('/stats')).requests;
const work = mkdtempSync(join(tmpdir(), 'rmb-loglik-'));

/** Runs a command under /usr/bin/time: wall seconds, peak RSS in MiB, and the server requests it made. */
const timed = async (file, args, env = process.env) => {
  const rss = join(work, `rss-${Math.random().toString(36).slice(2)}`);
  const n0 = await stats();
  const t0 = performance.now();
  execFileSync('/usr/bin/time', ['-f', '%M', '-o', rss, file, ...args], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env,
  });
  const seconds = (performance.now() - t0) / 1000;
  return {
    seconds,
    mib: Number(readFileSync(rss, 'utf8').trim().split('\n').pop()) / 1024,
    requests: (await stats()) - n0,
  };
};
const ours = (main) => async () => {
  const out = mkdtempSync(join(work, 'run-'));
  const r = await timed(process.execPath, [
    main,
    'llm',
    ...['--base-url', `http://127.0.0.1:${port}/v1`, '--model', 'bench', '--data', dataDir],
    ...['--tasks', 'RuMedDaNet', '--mode', 'loglik', '--concurrency', '8', '--bootstrap', '0', '--quiet'],
    ...['--out', out],
  ]);
  const samples = readFileSync(join(out, 'samples.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  return { ...r, samples };
};

// The task as lm-eval reads it: our export, over the same data file.
const taskDir = join(work, 'task');
execFileSync(process.execPath, [
  cli,
  'tasks',
  'export',
  '--format',
  'lm-eval',
  '--tasks',
  'RuMedDaNet',
  '--data',
  dataDir,
  '--out',
  taskDir,
  '--quiet',
]);
const lmArgs = `model=bench,base_url=http://127.0.0.1:${port}/v1/completions,num_concurrent=8,tokenizer_backend=remote`;
const lmeval = (batchSize) => async () => {
  const out = mkdtempSync(join(work, 'lmeval-'));
  const r = await timed(
    python,
    [
      ...['-m', 'lm_eval', 'run', '--model', 'local-completions', '--tasks', 'rumedbench_rumeddanet'],
      ...[
        '--include_path',
        taskDir,
        '--output_path',
        out,
        '--log_samples',
        '--batch_size',
        String(batchSize),
      ],
      ...['--model_args', lmArgs],
    ],
    {
      ...process.env,
      PYTHONPATH: join(root, 'bench', 'lmeval'),
      HF_DATASETS_OFFLINE: '1',
      HF_HUB_OFFLINE: '1',
      TOKENIZERS_PARALLELISM: 'false',
    },
  );
  const files = [];
  const walk = (d) => {
    for (const f of readdirSync(d)) {
      const p = join(d, f);
      if (statSync(p).isDirectory()) walk(p);
      else if (/samples_rumedbench_rumeddanet.*\.jsonl$/.test(f)) files.push(p);
    }
  };
  walk(out);
  const samples = readFileSync(files[0], 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  return { ...r, samples };
};
/** The texts the server scored during a run. */
const onWire = async (run) => {
  await ask('/reset', { method: 'POST' });
  const r = await run();
  const { prompts } = await ask('/prompts');
  return { ...r, wire: prompts };
};

const first = await onWire(ours(cli));
let batchSize;
const tried = [];
if (python) {
  for (const b of (process.env.BENCH_LMEVAL_BATCH_SIZES ?? '1,4,16,64').split(',').map(Number)) {
    const r = await onWire(lmeval(b));
    tried.push([b, r.seconds]);
    if (!batchSize || r.seconds < tried.find(([x]) => x === batchSize)[1]) batchSize = b;
    if (b === batchSize) first.lmeval = r;
  }
}

const systems = [['ours', ours(cli)]];
if (before) systems.unshift(['ours before', ours(before)]);
if (python) systems.push(['lm-eval 0.4.13', lmeval(batchSize)]);
else console.log('lm-eval: no LMEVAL_PYTHON (bash bench/lmeval/setup.sh installs one): ours only');
const runs = Object.fromEntries(systems.map(([name]) => [name, []]));
for (let i = 0; i < rounds; i++) for (const [name, run] of systems) runs[name].push(await run());

// The answers, item by item.
const answersOf = (samples) => new Map(samples.map((s) => [s.id, s.answer]));
const lpsOf = (samples) => JSON.stringify(samples.map((s) => [s.id, s.candidates.map((c) => c.logprob)]));
const ref = runs.ours[0].samples;
const checks = [];
if (before)
  checks.push([
    'ours before = ours, every log-probability',
    lpsOf(runs['ours before'][0].samples) === lpsOf(ref),
  ]);
const items = ref.length;
if (python) {
  const mine = answersOf(ref);
  const theirs = first.lmeval.samples;
  let same = 0;
  for (const s of theirs) {
    const id = String(s.doc.pairID);
    const lps = s.filtered_resps.map((r) => Number(r[0]));
    const best = lps.indexOf(Math.max(...lps));
    if (ref.find((x) => x.id === id)?.candidates[best]?.label === mine.get(id)) same++;
  }
  checks.push([`lm-eval's answers equal ours: ${same}/${items}`, same === items && theirs.length === items]);
  // On the wire: every context + candidate lm-eval scored is a text ours scored (ours also scores each context alone).
  const ourTexts = new Set(first.wire);
  const lmTexts = first.lmeval.wire;
  const expected = ref.reduce((n, x) => n + x.candidates.length, 0);
  const shared = lmTexts.filter((t) => ourTexts.has(t)).length;
  checks.push([
    `prompts on the wire: ${shared}/${lmTexts.length} of lm-eval's scored texts are ours byte for byte (${expected} expected)`,
    shared === lmTexts.length && lmTexts.length === expected,
  ]);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const m = Object.fromEntries(
  Object.entries(runs).map(([name, rs]) => [
    name,
    {
      seconds: median(rs.map((r) => r.seconds)),
      mib: median(rs.map((r) => r.mib)),
      requests: median(rs.map((r) => r.requests)),
    },
  ]),
);
console.log(
  `RuMedDaNet test (${items} items), log-likelihood, concurrency 8, one loopback vLLM-like server ` +
    `(${Number(process.env.BENCH_LATENCY_MS ?? 0)} ms per /v1/completions answer, none on /tokenize or /detokenize); ` +
    `medians of ${rounds} rounds, fresh processes`,
);
console.log('  ours: llm --mode loglik --concurrency 8 (its defaults otherwise)');
if (python)
  console.log(
    `  lm-eval 0.4.13: local-completions ${lmArgs.replace(/base_url=[^,]+,/, '')} (tokenized_requests and max_length at their defaults), ` +
      `--batch_size ${batchSize}, the fastest of ${tried.map(([b, s]) => `${b}: ${s.toFixed(2)} s`).join(', ')}`,
  );
for (const [name, x] of Object.entries(m))
  console.log(
    `  ${name.padEnd(15)} ${x.seconds.toFixed(2).padStart(6)} s  ${x.mib.toFixed(0).padStart(5)} MiB peak  ${String(x.requests).padStart(5)} requests`,
  );
const lm = m['lm-eval 0.4.13'];
if (lm)
  for (const name of Object.keys(m).filter((n) => n.startsWith('ours')))
    console.log(
      `  ${name} vs lm-eval: ${(lm.seconds / m[name].seconds).toFixed(2)}× faster, ${(m[name].mib / lm.mib).toFixed(2)}× peak memory (target ≥ 5×)`,
    );
if (before)
  console.log(
    `  ours vs ours before: ${(m['ours before'].seconds / m.ours.seconds).toFixed(2)}× faster, ${(m['ours before'].requests / m.ours.requests).toFixed(2)}× fewer requests`,
  );
for (const [what, ok] of checks) console.log(`  ${ok ? 'ok  ' : 'FAIL'} ${what}`);
server.kill();
if (checks.some(([, ok]) => !ok)) process.exitCode = 1;
