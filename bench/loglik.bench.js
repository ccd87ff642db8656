// Benchmark (issue #47): a log-likelihood run of RuMedDaNet's test set (256 items) at concurrency 8 against one
// loopback vLLM-like server (bench/loglik-vllm-server.js), by rumedbench (this build, and BENCH_BEFORE_CLI, another
// build's dist/bin/rumedbench.js, where set) and by EleutherAI lm-evaluation-harness 0.4.13 (`local-completions`,
// tokenized_requests=False, max_length=8192, the server's tokenizer), where LMEVAL_PYTHON names a Python with it
// (bash bench/lmeval/setup.sh installs one). lm-eval reads a task file whose prompts and candidates are ours byte for
// byte (written from our run's samples.jsonl). Each run is a fresh process, timed with /usr/bin/time (wall, peak
// RSS); the systems take turns in each round; medians of BENCH_ROUNDS (3) rounds. The answers are compared item by
// item, and our two builds' log-probabilities must be equal. Target: ≥ 5× faster than lm-eval.
// BENCH_LATENCY_MS gives the server a fixed delay per answer (0 by default).
import { execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
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
const stats = async () => (await (await fetch(`http://127.0.0.1:${port}/stats`)).json()).requests;
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

// Our prompts and candidates, as lm-eval's task file reads them.
const first = await ours(cli)();
const items = first.samples.map((s) => ({
  id: s.id,
  context: s.prompt,
  choices: s.candidates.map((c) => c.text),
  gold: s.candidates.findIndex((c) => c.label === s.gold),
}));
const taskDir = join(work, 'task');
mkdirSync(taskDir);
writeFileSync(join(taskDir, 'items.jsonl'), `${items.map((x) => JSON.stringify(x)).join('\n')}\n`);
writeFileSync(
  join(taskDir, 'rumeddanet_bench.yaml'),
  [
    'task: rumeddanet_bench',
    'dataset_path: json',
    `dataset_kwargs: {data_files: {test: ${JSON.stringify(join(taskDir, 'items.jsonl'))}}}`,
    'test_split: test',
    'output_type: multiple_choice',
    "doc_to_text: '{{context}}'",
    "doc_to_choice: '{{choices}}'",
    "doc_to_target: '{{gold}}'",
    "target_delimiter: ''",
    'metric_list: [{metric: acc}]',
    '',
  ].join('\n'),
);
const lmeval = async () => {
  const out = mkdtempSync(join(work, 'lmeval-'));
  const r = await timed(
    python,
    [
      ...['-m', 'lm_eval', 'run', '--model', 'local-completions', '--tasks', 'rumeddanet_bench'],
      ...['--include_path', taskDir, '--output_path', out, '--log_samples'],
      '--model_args',
      `model=bench,base_url=http://127.0.0.1:${port}/v1/completions,num_concurrent=8,tokenized_requests=False,tokenizer_backend=remote,max_length=8192`,
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
      else if (/samples_rumeddanet_bench.*\.jsonl$/.test(f)) files.push(p);
    }
  };
  walk(out);
  const samples = readFileSync(files[0], 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  return { ...r, samples };
};

const systems = [['ours', ours(cli)]];
if (before) systems.unshift(['ours before', ours(before)]);
if (python) systems.push(['lm-eval 0.4.13', lmeval]);
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
if (python) {
  const mine = answersOf(ref);
  const theirs = runs['lm-eval 0.4.13'][0].samples;
  let same = 0;
  let prompts = 0;
  const byId = new Map(items.map((x) => [x.id, x]));
  for (const s of theirs) {
    const item = byId.get(s.doc.id);
    const lps = s.filtered_resps.map((r) => Number(r[0]));
    const best = lps.indexOf(Math.max(...lps));
    if (item && ref.find((x) => x.id === item.id)?.candidates[best]?.label === mine.get(item.id)) same++;
    const args = Object.values(s.arguments).map((a) => [a.arg_0, a.arg_1]);
    if (
      item &&
      args.length === item.choices.length &&
      args.every((a, k) => a[0] === item.context && a[1] === item.choices[k])
    )
      prompts++;
  }
  checks.push([`lm-eval's answers equal ours: ${same}/${items.length}`, same === items.length]);
  checks.push([`lm-eval's prompts byte-identical: ${prompts}/${items.length}`, prompts === items.length]);
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
  `RuMedDaNet test (${items.length} items), log-likelihood, concurrency 8, one loopback vLLM-like server ` +
    `(${Number(process.env.BENCH_LATENCY_MS ?? 0)} ms a request); medians of ${rounds} rounds, fresh processes`,
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
