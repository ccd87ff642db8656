// Benchmark: texts per second of the encoder path as `baseline encoder` runs it (tokenise, encode pairs, pad,
// run, pool) against onnxruntime-node alone on the same pre-tokenised, pre-padded batches, side by side in one
// process, on generated random BERTs: the tests' tiny one and one of RuBERT-base's size (12 layers x 768,
// 120k vocabulary, 178M parameters), fp32 and q8. Inputs are real RuMedBench texts (symptoms, and DaNet pairs)
// when the data is found, else made-up Russian sentences. Models are written to a temporary folder, not committed.
// Target (issue #11): at most 15% overhead over the runtime alone.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import { Embedder } from '../dist/encoders/embed.js';
import { Encoder } from '../dist/encoders/model.js';
import { writeSyntheticBert } from '../dist/encoders/synthetic.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dataDir = process.env.RUMEDBENCH_DATA || resolve(root, '..', 'shared', 'rumedbench', 'data');
const RUNS = Number(process.env.BENCH_RUNS || 3);
const THREADS = Number(process.env.BENCH_THREADS || availableParallelism());
const BATCH = 16;
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/**
 * A vocabulary like RuBERT's for these texts: the frequent words whole, and frequent endings as `##` pieces, so
 * that a word splits into one to three pieces, not into letters (which would make WordPiece, quadratic in a word's
 * length when it fails to match, the bottleneck that no real model has).
 */
function vocabularyOf(texts) {
  const words = new Map();
  const endings = new Map();
  for (const t of texts.flat()) {
    for (const w of t
      .toLowerCase()
      .normalize('NFD')
      .replace(/\p{Mn}/gu, '')
      .match(/\p{L}+|\p{N}+/gu) ?? []) {
      words.set(w, (words.get(w) ?? 0) + 1);
      for (let k = 2; k <= 5 && k < w.length; k++)
        endings.set(`##${w.slice(-k)}`, (endings.get(`##${w.slice(-k)}`) ?? 0) + 1);
    }
  }
  const top = (m, n) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([w]) => w);
  return [...top(words, 25_000), ...top(endings, 5_000)];
}

function inputs(n) {
  const read = (task) =>
    readFileSync(join(dataDir, task, 'train_v1.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
  if (existsSync(join(dataDir, 'RuMedSymptomRec', 'train_v1.jsonl'))) {
    const texts = read('RuMedSymptomRec').map((r) => r.symptoms);
    const pairs = read('RuMedDaNet').map((r) => [r.context, r.question]);
    return Array.from({ length: n }, (_, i) =>
      i % 4 === 3 ? pairs[i % pairs.length] : texts[i % texts.length],
    );
  }
  const words = [
    'боль',
    'в',
    'голове',
    'кашель',
    'температура',
    'давление',
    'слабость',
    'тошнота',
    'после',
    'еды',
  ];
  return Array.from({ length: n }, (_, i) =>
    Array.from({ length: 8 + (i % 40) }, (_, k) => words[(i * 7 + k) % words.length]).join(' '),
  );
}

/** The same batches Encoder.run builds, as ready tensors: what onnxruntime alone is given. */
function prebuilt(encoder, texts, maxLength) {
  const encoded = texts.map((t) => encoder.tokenizer.encode(t, maxLength));
  const order = Array.from(encoded.keys()).sort(
    (a, b) => encoded[b].ids.length - encoded[a].ids.length || a - b,
  );
  const batches = [];
  for (let from = 0; from < order.length; from += BATCH) {
    const rows = order.slice(from, from + BATCH);
    const length = encoded[rows[0]].ids.length;
    const ids = new BigInt64Array(rows.length * length);
    const mask = new BigInt64Array(rows.length * length);
    const types = new BigInt64Array(rows.length * length);
    rows.forEach((r, b) => {
      encoded[r].ids.forEach((v, t) => {
        ids[b * length + t] = BigInt(v);
        mask[b * length + t] = 1n;
        types[b * length + t] = BigInt(encoded[r].typeIds[t]);
      });
    });
    const shape = [rows.length, length];
    batches.push({
      input_ids: new ort.Tensor('int64', ids, shape),
      attention_mask: new ort.Tensor('int64', mask, shape),
      token_type_ids: new ort.Tensor('int64', types, shape),
    });
  }
  return { batches, tokens: encoded.reduce((n, e) => n + e.ids.length, 0) };
}

async function measure(label, dir, dtype, n) {
  const encoder = await Encoder.load(dir, { dtype, threads: THREADS });
  const file = join(dir, dtype === 'q8' ? 'onnx/model_quantized.onnx' : 'onnx/model.onnx');
  const session = await ort.InferenceSession.create(file, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    interOpNumThreads: 1,
    // The session options Encoder.load uses.
    extra: { session: { intra_op: { allow_spinning: '0' } } },
    intraOpNumThreads: THREADS,
  });
  const texts = inputs(n);
  const maxLength = Math.min(128, encoder.info.maxPositions);
  const { batches, tokens } = prebuilt(encoder, texts, maxLength);
  const whole = [];
  const alone = [];
  // Warm-up, then interleaved runs so that a noisy neighbour slows both alike.
  await new Embedder(encoder, { pooling: 'mean', batchSize: BATCH, maxLength }).embedTexts(
    texts.slice(0, BATCH),
  );
  await session.run(batches[0]);
  for (let i = 0; i < RUNS; i++) {
    let t0 = performance.now();
    await new Embedder(encoder, { pooling: 'mean', batchSize: BATCH, maxLength }).embedTexts(texts);
    whole.push((performance.now() - t0) / 1000);
    t0 = performance.now();
    for (const feeds of batches) {
      const out = await session.run(feeds);
      for (const t of Object.values(out)) t.dispose();
    }
    alone.push((performance.now() - t0) / 1000);
  }
  const w = median(whole);
  const a = median(alone);
  console.log(
    `  ${label.padEnd(22)} ${String(n).padStart(5)} texts (${(tokens / n).toFixed(0)} tokens each): whole path ${(n / w).toFixed(1).padStart(7)} texts/s, runtime alone ${(n / a).toFixed(1).padStart(7)} texts/s; overhead ${(((w - a) / a) * 100).toFixed(1)}% (${(w / a).toFixed(3)}x)`,
  );
  await encoder.close();
  await session.release();
}

const tmp = mkdtempSync(join(tmpdir(), 'rumedbench-bench-encoder-'));
try {
  console.log(
    `encoder path vs onnxruntime-node alone; ${THREADS} threads, batches of ${BATCH}, max 128 tokens, ${RUNS} runs, medians`,
  );
  const extraVocabulary = vocabularyOf(inputs(20_000));
  const tiny = writeSyntheticBert(join(tmp, 'tiny'), { quantized: true, extraVocabulary });
  await measure('tiny (2 x 32) fp32', tiny, 'fp32', 4000);
  await measure('tiny (2 x 32) q8', tiny, 'q8', 4000);
  // The tests' letter-level vocabulary: WordPiece at its worst (most words fall apart into letters).
  const letters = writeSyntheticBert(join(tmp, 'letters'), {});
  await measure('tiny, letters vocab', letters, 'fp32', 4000);
  if (process.env.BENCH_SKIP_BASE !== '1') {
    const t0 = performance.now();
    const base = writeSyntheticBert(join(tmp, 'base'), {
      hiddenSize: 768,
      layers: 12,
      heads: 12,
      intermediateSize: 3072,
      maxPositions: 512,
      vocabSize: 119547,
      quantized: true,
      extraVocabulary,
    });
    console.log(`  (base-size model written in ${((performance.now() - t0) / 1000).toFixed(1)} s)`);
    await measure('base (12 x 768) fp32', base, 'fp32', Number(process.env.BENCH_BASE_TEXTS || 256));
    await measure('base (12 x 768) q8', base, 'q8', Number(process.env.BENCH_BASE_TEXTS || 256));
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
