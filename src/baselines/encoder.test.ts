import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tinyBert } from '../../test/helpers/tiny-bert.js';
import { Embedder } from '../encoders/embed.js';
import { Encoder } from '../encoders/model.js';
import { writeSyntheticBert } from '../encoders/synthetic.js';
import { getTask } from '../tasks/registry.js';
import type { TaskRecord } from '../tasks/types.js';
import { trainEncoder, viterbiIob2 } from './encoder.js';
import { loadModel, saveModel } from './model-io.js';

describe('IOB2-constrained decoding of per-word tag probabilities', () => {
  const tags = ['B-ADR', 'I-ADR', 'B-DI', 'I-DI', 'O'];
  const probs = (rows: number[][]) => Float64Array.from(rows.flat());

  it('never starts an entity with I-, nor continues another type', () => {
    // Word by word the best tags would be I-ADR, I-DI, O: both I- tags are invalid there.
    const p = probs([
      [0.3, 0.4, 0.1, 0.1, 0.1],
      [0.05, 0.05, 0.3, 0.5, 0.1],
      [0.1, 0.1, 0.1, 0.1, 0.6],
    ]);
    expect(viterbiIob2(p, 0, 3, tags)).toEqual(['B-ADR', 'B-DI', 'O']);
  });

  it('keeps a valid argmax sequence as it is, and reads from an offset', () => {
    const p = probs([
      [0, 0, 0, 0, 1],
      [0.7, 0.1, 0.1, 0, 0.1],
      [0.1, 0.7, 0.1, 0, 0.1],
    ]);
    expect(viterbiIob2(p, 0, 3, tags)).toEqual(['O', 'B-ADR', 'I-ADR']);
    expect(viterbiIob2(p, 5, 2, tags)).toEqual(['B-ADR', 'I-ADR']);
  });
});

describe('encoder heads saved and reloaded', () => {
  const danet = getTask('RuMedDaNet');
  const record = (i: number, context: string, question: string, answer: string): TaskRecord => ({
    id: String(i),
    gold: answer,
    raw: { pairID: String(i), context, question, answer },
    line: i + 1,
  });
  const train = [
    record(0, 'боль в голове', 'боль?', 'да'),
    record(1, 'кашель и температура', 'боль?', 'нет'),
    record(2, 'давление высокое', 'давление?', 'да'),
    record(3, 'сердце в норме', 'давление?', 'нет'),
    record(4, 'лечение таблетки', 'препарат?', 'да'),
    record(5, 'врач и пациент', 'препарат?', 'нет'),
  ];

  it('reload to the same probabilities, and refuse an encoder whose file changed', async () => {
    const dir = tinyBert();
    const encoder = await Encoder.load(dir, { threads: 1 });
    const embedder = new Embedder(encoder, { pooling: 'mean' });
    const model = await trainEncoder(danet, train, embedder, { seed: 0, threads: 1 });
    await model.prepare?.(train);
    const before = model.rank?.(train, 2);
    const saved = join(mkdtempSync(join(tmpdir(), 'rumedbench-heads-')), 'RuMedDaNet');
    saveModel(saved, model, { split: 'train', records: train.length });
    await embedder.close();

    const { model: loaded, manifest } = loadModel(saved, 'RuMedDaNet');
    expect(manifest.method).toBe('encoder');
    await loaded.prepare?.(train);
    expect(loaded.rank?.(train, 2)).toEqual(before);
    expect(() => loaded.predict([record(9, 'x', 'y', 'да')])).toThrow(
      'was not embedded; call prepare() first',
    );
    await loaded.close?.();

    // Another model written over the same folder: the heads no longer fit it.
    writeSyntheticBert(dir, { seed: 2 });
    const { model: stale } = loadModel(saved);
    await expect(stale.prepare?.(train)).rejects.toThrow(
      'this is not the encoder the heads were trained with',
    );
  });
});
