// Benchmark (issue #10): the embedded engine (node-llama-cpp) on generated GGUF models, written by the test helper
// into .bench-out/ (nothing committed):
// 1. log-likelihood on RuMedTop3 (105 candidates an item): the token trie against scoring every candidate on its
//    own, prompt and all; evaluated positions and time, side by side. Target: at least 3x fewer positions.
// 2. items/s with 1, 2, 4 and 8 parallel sequences, generation and log-likelihood (RuMedDaNet), on the tiny model and
//    on a larger one (a few MB, so that compute dominates); the answers must not change with the sequences.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildMessages, getTask, loadSplit, readGoldLabels } from '../dist/index.js';
import { LlamaProvider } from '../dist/llm/llama.js';
import { loglikItem } from '../dist/llm/loglik.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dataDir = process.env.RUMEDBENCH_DATA || resolve(root, '..', 'shared', 'rumedbench', 'data');
if (!existsSync(join(dataDir, 'RuMedTop3', 'test_v1.jsonl'))) {
  console.log(`skipped: RuMedBench data not found at ${dataDir}`);
  process.exit(0);
}
// The GGUF writer is a TypeScript test helper: compile it on its own.
const out = join(root, '.bench-out', 'gguf');
mkdirSync(out, { recursive: true });
execFileSync(process.execPath, [
  join(root, 'node_modules/typescript/bin/tsc'),
  '--module',
  'nodenext',
  '--moduleResolution',
  'nodenext',
  '--target',
  'es2022',
  '--skipLibCheck',
  '--outDir',
  join(out, 'js'),
  '--rootDir',
  root,
  join(root, 'test/helpers/tiny-gguf.ts'),
]);
const { writeTinyGguf } = await import(pathToFileURL(join(out, 'js/test/helpers/tiny-gguf.js')).href);
const tiny = join(out, 'tiny.gguf');
const larger = join(out, 'larger.gguf');
writeTinyGguf(tiny);
writeTinyGguf(larger, 2, { embd: 256, ff: 768, heads: 8, layers: 2 });
const mb = (f) => (statSync(f).size / 2 ** 20).toFixed(1);

// 1. The trie against every candidate on its own.
const top3 = getTask('RuMedTop3');
const labels = [...(await readGoldLabels(top3, 'train', { dataDir }))].sort();
const items = (await loadSplit(top3, 'test', { dataDir })).slice(0, Number(process.env.BENCH_ITEMS || 8));
const engine = await LlamaProvider.load({ modelPath: tiny, contextSize: 2048 });
const rows = [];
for (const trie of [true, false]) {
  let positions = 0;
  const t0 = performance.now();
  const answers = [];
  for (const r of items) {
    const it = loglikItem(top3, r, [], { labels });
    const res = await engine.loglik(
      { context: it.context, continuations: it.candidates.map((c) => c.text) },
      { trie },
    );
    positions += res.positions;
    answers.push(res.logprobs);
  }
  rows.push({ trie, positions, seconds: (performance.now() - t0) / 1000, answers });
}
await engine.close();
const [withTrie, separate] = rows;
const maxDiff = Math.max(
  ...withTrie.answers.flatMap((a, i) => a.map((x, j) => Math.abs(x - separate.answers[i][j]))),
);
console.log(
  `log-likelihood, RuMedTop3, ${items.length} items x ${labels.length} candidates, tiny model (${mb(tiny)} MB)`,
);
console.log('  method           positions   seconds');
console.log(
  `  trie          ${String(withTrie.positions).padStart(12)}  ${withTrie.seconds.toFixed(2).padStart(8)}`,
);
console.log(
  `  each alone    ${String(separate.positions).padStart(12)}  ${separate.seconds.toFixed(2).padStart(8)}`,
);
console.log(
  `  ratio: ${(separate.positions / withTrie.positions).toFixed(1)}x fewer positions, ${(separate.seconds / withTrie.seconds).toFixed(1)}x less time; largest score difference ${maxDiff.toExponential(1)}; target >= 3x: ${separate.positions / withTrie.positions >= 3 ? 'met' : 'NOT met'}`,
);

// 2. Parallel sequences.
const danet = getTask('RuMedDaNet');
const records = (await loadSplit(danet, 'test', { dataDir })).slice(
  0,
  Number(process.env.BENCH_SEQ_ITEMS || 32),
);
console.log(
  `\nitems/s by parallel sequences, RuMedDaNet, ${records.length} items (generation: 16 tokens at temperature 0)`,
);
console.log('  model             mode      1 seq    2 seq    4 seq    8 seq   same answers as 1 sequence');
for (const [name, file] of [
  [`tiny (${mb(tiny)} MB)`, tiny],
  [`larger (${mb(larger)} MB)`, larger],
]) {
  for (const mode of ['generate', 'loglik']) {
    const rates = [];
    let reference;
    let same = true;
    let drift = 0;
    let textsDiffer = 0;
    for (const n of [1, 2, 4, 8]) {
      const p = await LlamaProvider.load({ modelPath: file, contextSize: 1024, sequences: n });
      const t0 = performance.now();
      let next = 0;
      const answers = new Array(records.length);
      await Promise.all(
        Array.from({ length: n }, async () => {
          for (;;) {
            const i = next++;
            if (i >= records.length) return;
            const r = records[i];
            if (mode === 'generate') {
              const reply = await p.chat(buildMessages(danet, r, [], { shots: 0, seed: 0, context: {} }), {
                temperature: 0,
                maxTokens: 16,
                seed: 0,
              });
              const parsed = danet.prompt.parse(reply.text, r.raw, {});
              answers[i] = { text: reply.text, answer: parsed.status === 'parsed' ? parsed.answer : null };
            } else {
              const it = loglikItem(danet, r, [], {});
              const lp = (
                await p.loglik({ context: it.context, continuations: it.candidates.map((c) => c.text) })
              ).logprobs;
              answers[i] = { best: lp.indexOf(Math.max(...lp)), lp };
            }
          }
        }),
      );
      rates.push(records.length / ((performance.now() - t0) / 1000));
      await p.close();
      if (reference === undefined) reference = answers;
      else if (
        mode === 'generate'
          ? answers.some((a, i) => a.answer !== reference[i].answer)
          : answers.some((a, i) => a.best !== reference[i].best)
      )
        same = false;
      // Batches of other sizes add in another order: scores move in their last digits, answers should not.
      if (mode === 'generate' && reference !== answers)
        textsDiffer += answers.filter((a, i) => a.text !== reference[i].text).length;
      if (mode === 'loglik' && reference !== answers)
        drift = Math.max(
          drift,
          ...answers.flatMap((a, i) => a.lp.map((x, j) => Math.abs(x - reference[i].lp[j]))),
        );
    }
    console.log(
      `  ${name.padEnd(16)}  ${mode.padEnd(8)}  ${rates.map((r) => r.toFixed(1).padStart(7)).join('  ')}   ${same ? 'yes' : 'NO'}${mode === 'loglik' ? ` (scores within ${drift.toExponential(1)})` : ` (${textsDiffer} of ${3 * records.length} raw replies differ)`}`,
    );
  }
}
