import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { getTask } from '../tasks/registry.js';
import type { TaskRecord } from '../tasks/types.js';
import { bilstmThreads, bilstmWords, earlyStopping, trainBilstm } from './bilstm.js';
import { loadModel, saveModel } from './model-io.js';

describe('bilstm: early stopping as upstream counts it', () => {
  it('stops at the third epoch that fails to beat the best dev loss, improvements in between notwithstanding', () => {
    const stop = earlyStopping(3);
    // A counter reset by each improvement would never stop on this sequence.
    expect([1.0, 0.9, 0.95, 0.8, 0.85, 0.7, 0.75].map((l) => stop(l))).toEqual([
      false,
      false,
      false,
      false,
      false,
      false,
      true,
    ]);
    const never = earlyStopping(undefined);
    expect([1, 2, 3, 4, 5].map((l) => never(l))).toEqual([false, false, false, false, false]);
  });
});

describe('bilstm: words', () => {
  it('lower-cases, keeps numbers and hyphenated words whole, drops punctuation', () => {
    expect(bilstmWords('Боль в груди, 3-4 дня! Т. 38,5 (COVID-19)')).toEqual([
      'боль',
      'в',
      'груди',
      '3-4',
      'дня',
      'т',
      '38',
      '5',
      'covid-19',
    ]);
  });
});

/** RuMedDaNet-shaped pairs whose answer the context's first word gives: what the backward direction reads last. */
function pairs(n: number, offset = 0): TaskRecord[] {
  return Array.from({ length: n }, (_, k) => {
    const i = k + offset;
    const yes = i % 2 === 0;
    return {
      id: `r${i}`,
      gold: yes ? 'да' : 'нет',
      raw: {
        pairID: `r${i}`,
        context: `${yes ? 'кашель' : 'сыпь'} у пациента ${i}, жалобы на боль и слабость`,
        question: 'есть ли кашель?',
        answer: yes ? 'да' : 'нет',
      },
      line: k + 1,
    };
  });
}

describe('bilstm: a small network learns, repeats itself given a seed, and comes back from disk the same', () => {
  const task = getTask('RuMedDaNet');
  const size = { embedding: 8, hidden: 6 };
  const train = pairs(16);
  const dev = pairs(6, 100);

  it('fits a separable pair task, its losses falling, each epoch reported', () => {
    const lines: string[] = [];
    const model = trainBilstm(task, train, {
      seed: 1,
      size,
      epochs: 25,
      dev,
      progress: (l) => lines.push(l),
    });
    expect(model.predict(dev)).toEqual(dev.map((r) => r.gold));
    const history = model.serialize().meta.history as { train_loss: number }[];
    expect(history.length).toBeGreaterThanOrEqual(5);
    // 25 Adam steps at lr 1e-3 (one batch an epoch): the loss falls steadily, if not far.
    const losses = history.map((h) => h.train_loss);
    expect(losses.every((l, k) => k === 0 || l < (losses[k - 1] as number))).toBe(true);
    expect(lines[0]).toMatch(
      /^RuMedDaNet: epoch 1\/25: train loss \d\.\d{4}, dev loss \d\.\d{4}, \d+\.\d s$/,
    );
  });

  it('the same seed gives the same weights; another seed, others', () => {
    const a = trainBilstm(task, train, { seed: 3, size, epochs: 2 }).serialize().arrays;
    const b = trainBilstm(task, train, { seed: 3, size, epochs: 2 }).serialize().arrays;
    const c = trainBilstm(task, train, { seed: 4, size, epochs: 2 }).serialize().arrays;
    expect(b).toEqual(a);
    expect(c['head.weight']).not.toEqual(a['head.weight']);
  });

  it('saved and loaded, it ranks and predicts exactly as before', () => {
    const model = trainBilstm(task, train, { seed: 2, size, epochs: 3 });
    const dir = mkdtempSync(join(tmpdir(), 'rumedbench-bilstm-'));
    saveModel(dir, model, { split: 'train', records: train.length });
    const { model: back, manifest } = loadModel(dir, 'RuMedDaNet');
    expect(manifest.method).toBe('bilstm');
    expect(back.rank?.(dev, 2)).toEqual(model.rank?.(dev, 2));
    expect(back.predict(dev)).toEqual(model.predict(dev));
  });
});

describe('bilstm: threads', () => {
  it('runs 2 where the machine has 2 cores, 1 on one core; refuses more than 2, or more than the cores', () => {
    expect(bilstmThreads(undefined, 2)).toBe(2);
    expect(bilstmThreads(undefined, 16)).toBe(2);
    expect(bilstmThreads(undefined, 1)).toBe(1);
    expect(bilstmThreads(1, 1)).toBe(1);
    expect(bilstmThreads(2, 8)).toBe(2);
    expect(() => bilstmThreads(3, 16)).toThrow('--threads 3: the BiLSTM runs at most 2 threads');
    expect(() => bilstmThreads(2, 1)).toThrow('--threads 2: this machine has 1 core');
  });

  it('trains the same weights on 1 thread and on 2', () => {
    const task = getTask('RuMedDaNet');
    const options = { seed: 3, size: { embedding: 8, hidden: 6 }, epochs: 2 };
    const one = trainBilstm(task, pairs(16), { ...options, threads: 1 }).serialize().arrays;
    const two = trainBilstm(task, pairs(16), { ...options, threads: 2 }).serialize().arrays;
    expect(two).toEqual(one);
  });
});
