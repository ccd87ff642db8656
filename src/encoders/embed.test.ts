import { mkdtempSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, describe, expect, it } from 'vitest';
import { tinyBert } from '../../test/helpers/tiny-bert.js';
import { openEmbeddingCache } from './cache.js';
import { Embedder } from './embed.js';
import { Encoder, ONNX_FILES } from './model.js';

const dir = tinyBert({ quantized: true });
const encoder = await Encoder.load(dir, { threads: 1 });
afterAll(() => encoder.close());

const TEXTS = [
  'Боль в голове и кашель',
  'температура 38, слабость',
  'да',
  'Пациент жалуется на боль в животе после еды, тошноту и слабость в течение трёх дней',
  '漢字 и латиница: aspirin 500 mg',
  '',
  'давление',
];

/** The hidden states of one input, run alone and unpadded straight through onnxruntime-node. */
async function direct(ids: Int32Array, typeIds: Int32Array): Promise<{ data: Float32Array; width: number }> {
  const session = await ort.InferenceSession.create(join(dir, ONNX_FILES.fp32));
  const shape = [1, ids.length];
  const big = (a: Int32Array) => BigInt64Array.from(a, (v) => BigInt(v));
  const out = await session.run({
    input_ids: new ort.Tensor('int64', big(ids), shape),
    attention_mask: new ort.Tensor('int64', new BigInt64Array(ids.length).fill(1n), shape),
    token_type_ids: new ort.Tensor('int64', big(typeIds), shape),
  });
  const t = out.last_hidden_state as ort.Tensor;
  await session.release();
  return { data: t.data as Float32Array, width: t.dims[2] as number };
}

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs((a[i] as number) - (b[i] as number)));
  return m;
}

describe('the encoder on a generated BERT', () => {
  it('loads the folder, hashes the model file and knows its limits', () => {
    expect(encoder.info.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(encoder.info.maxPositions).toBe(128);
    expect(encoder.outputNames).toEqual(['last_hidden_state']);
  });

  it('mean and CLS vectors equal a direct onnxruntime-node run of the same ids', async () => {
    const mean = await new Embedder(encoder, { pooling: 'mean' }).embedTexts(TEXTS);
    const cls = await new Embedder(encoder, { pooling: 'cls' }).embedTexts(TEXTS);
    for (const [i, text] of TEXTS.entries()) {
      const e = encoder.tokenizer.encode(text, 128);
      const { data, width } = await direct(e.ids, e.typeIds);
      const expected = new Float64Array(width);
      for (let t = 0; t < e.ids.length; t++)
        for (let d = 0; d < width; d++)
          expected[d] = (expected[d] as number) + (data[t * width + d] as number) / e.ids.length;
      expect(maxDiff(mean[i] as Float32Array, expected)).toBeLessThan(1e-5);
      expect(maxDiff(cls[i] as Float32Array, data.subarray(0, width))).toBeLessThan(1e-5);
    }
  });

  it('padding and batch size change no vector', async () => {
    const one = await new Embedder(encoder, { pooling: 'mean', batchSize: 1 }).embedTexts(TEXTS);
    const three = await new Embedder(encoder, { pooling: 'mean', batchSize: 3 }).embedTexts(TEXTS);
    const all = await new Embedder(encoder, { pooling: 'mean', batchSize: 64 }).embedTexts(TEXTS);
    for (let i = 0; i < TEXTS.length; i++) {
      expect(maxDiff(one[i] as Float32Array, three[i] as Float32Array)).toBeLessThan(1e-5);
      expect(maxDiff(one[i] as Float32Array, all[i] as Float32Array)).toBeLessThan(1e-5);
    }
  });

  it('many inputs, tokenised ahead on a thread of their own in chunks, give the vectors of a few at a time', async () => {
    const many = Array.from({ length: 700 }, (_, i) =>
      i % 3 === 0
        ? ([TEXTS[i % TEXTS.length] as string, `вопрос ${i}`] as const)
        : `${TEXTS[i % TEXTS.length]} ${i}`,
    );
    const threaded = await new Embedder(encoder, { pooling: 'mean', batchSize: 16 }).embedTexts(many);
    const inline: Float32Array[] = [];
    for (let i = 0; i < many.length; i += 100)
      inline.push(
        ...(await new Embedder(encoder, { pooling: 'mean', batchSize: 16 }).embedTexts(
          many.slice(i, i + 100),
        )),
      );
    many.forEach((_, i) => {
      expect(maxDiff(threaded[i] as Float32Array, inline[i] as Float32Array)).toBeLessThan(1e-5);
    });
  });

  it('pairs are encoded as pairs: swapping the segments or dropping the second changes the vector', async () => {
    const e = new Embedder(encoder, { pooling: 'mean' });
    const [ab, ba, a, joined] = await e.embedTexts([
      ['боль в голове', 'да нет'],
      ['да нет', 'боль в голове'],
      'боль в голове',
      'боль в голове да нет',
    ]);
    expect(maxDiff(ab as Float32Array, ba as Float32Array)).toBeGreaterThan(1e-3);
    expect(maxDiff(ab as Float32Array, a as Float32Array)).toBeGreaterThan(1e-3);
    // [CLS] A [SEP] B [SEP] with type ids 1 is not the single text "A B".
    expect(maxDiff(ab as Float32Array, joined as Float32Array)).toBeGreaterThan(1e-3);
  });

  it('word vectors: one per word, the hidden state of its first piece, also across windows', async () => {
    const words = ['Головная', 'боль', '漢', 'и', 'кашель', '!'];
    const [m] = await new Embedder(encoder, { pooling: 'mean' }).embedWords([words]);
    const [w] = encoder.tokenizer.encodeWords(words, 128);
    if (!w || !m) throw new Error('no window');
    const { data, width } = await direct(w.ids, w.typeIds);
    expect(m.length).toBe(words.length * width);
    w.wordStarts.forEach((pos, k) => {
      expect(
        maxDiff(m.subarray(k * width, (k + 1) * width), data.subarray(pos * width, (pos + 1) * width)),
      ).toBeLessThan(1e-5);
    });
    // A long sentence in windows of 10 tokens: still one vector per word.
    const long = Array.from({ length: 30 }, (_, i) => words[i % words.length] as string);
    const [lm] = await new Embedder(encoder, { pooling: 'mean', maxLength: 10 }).embedWords([long]);
    expect(lm?.length).toBe(long.length * width);
  });

  it('the cache: a second run embeds nothing and returns the same vectors; another pooling is another space', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'rumedbench-cache-'));
    const cache = openEmbeddingCache(join(cacheDir, 'e.sqlite'));
    const first = new Embedder(encoder, { pooling: 'mean', cache });
    const a = await first.embedTexts([...TEXTS, TEXTS[0] as string]);
    // The repeated text is embedded once.
    expect(first.stats).toMatchObject({ embedded: TEXTS.length, fromCache: 0 });
    const second = new Embedder(encoder, { pooling: 'mean', cache });
    const b = await second.embedTexts(TEXTS);
    expect(second.stats).toMatchObject({ embedded: 0, fromCache: TEXTS.length });
    TEXTS.forEach((_, i) => {
      expect(Array.from(b[i] as Float32Array)).toEqual(Array.from(a[i] as Float32Array));
    });
    const cls = new Embedder(encoder, { pooling: 'cls', cache });
    await cls.embedTexts(TEXTS);
    expect(cls.stats.embedded).toBe(TEXTS.length);
    cache.close();
  });

  it('q8: the quantized file loads and gives vectors close to fp32 (a different hash, so a different cache space)', async () => {
    const q8 = await Encoder.load(dir, { dtype: 'q8', threads: 1 });
    expect(q8.info.sha256).not.toBe(encoder.info.sha256);
    const [a] = await new Embedder(q8, { pooling: 'mean' }).embedTexts([TEXTS[0] as string]);
    const [b] = await new Embedder(encoder, { pooling: 'mean' }).embedTexts([TEXTS[0] as string]);
    expect(maxDiff(a as Float32Array, b as Float32Array)).toBeLessThan(0.05);
    await q8.close();
  });

  it('a folder without the asked file says what is there; a missing tokenizer is named', async () => {
    const fp32Only = tinyBert();
    await expect(Encoder.load(fp32Only, { dtype: 'q8' })).rejects.toThrow(
      'onnx/model_quantized.onnx is missing; onnx/model.onnx is there (--dtype fp32)',
    );
    // optimum-cli's layout: model.onnx beside config.json.
    renameSync(join(fp32Only, 'onnx', 'model.onnx'), join(fp32Only, 'model.onnx'));
    const optimum = await Encoder.load(fp32Only);
    expect(optimum.info.onnxFile).toBe(join(fp32Only, 'model.onnx'));
    await optimum.close();
    renameSync(join(fp32Only, 'tokenizer.json'), join(fp32Only, 'tokenizer.json.bak'));
    await expect(Encoder.load(fp32Only)).rejects.toMatchObject({
      code: 'MODEL_INVALID',
      message: expect.stringContaining('tokenizer.json is missing'),
    });
    await expect(Encoder.load(tinyBert({ extraInputs: ['position_ids'] }))).rejects.toThrow(
      'the model asks for inputs this tool does not give (position_ids); it gives input_ids, attention_mask, token_type_ids',
    );
    await expect(Encoder.load('/nonexistent/folder')).rejects.toThrow('no such folder, and not a hub id');
    await expect(Encoder.load('../../../x', { allowDownload: true })).rejects.toThrow('not a hub id');
    await expect(Encoder.load('../nope', { allowDownload: true })).rejects.toThrow('not a hub id');
    await expect(Encoder.load('someone/some-model', { allowDownload: false })).rejects.toThrow(
      'downloading hub models is switched off',
    );
  });
});
