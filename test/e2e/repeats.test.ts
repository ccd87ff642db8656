/**
 * `llm --repeats K` on fixture data against a loopback server whose answers depend on the sampling seed: every item
 * asked K times with seeds seed…seed+K−1, the majority answer scored, the mean accuracy across repeats and the items
 * whose answer flips, each equal to a computation by hand from samples.jsonl; a run grows its repeats on --resume.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rumedbench, rumedbenchOk } from '../helpers/cli.js';
import { type ChatRequestBody, useFakeOpenAI } from '../helpers/fake-openai.js';
import { fixtureDataDir } from '../helpers/fixture-data.js';

const DATA = fixtureDataDir();
/** Mostly "да", sometimes "нет", now and then nothing readable: a function of the seed and the prompt. */
const reply = (body: ChatRequestBody) => {
  const h = createHash('sha256')
    .update(`${body.seed}|${body.messages.at(-1)?.content}`)
    .digest()[0] as number;
  return h % 7 === 0 ? 'Не знаю.' : `Ответ: ${h % 3 === 0 ? 'нет' : 'да'}`;
};
const lines = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));

describe('llm --repeats (on fixture data the test writes)', () => {
  const server = useFakeOpenAI({ reply });
  const llm = (out: string, ...more: string[]) => [
    ...[
      'llm',
      '--base-url',
      server().url,
      '--model',
      'fake',
      '--data',
      DATA,
      '--tasks',
      'RuMedDaNet',
      '--limit',
      '20',
    ],
    ...['--temperature', '0.7', '--bootstrap', '0', '--out', out, ...more],
  ];

  it('scores the majority of K answers, and reports mean accuracy and flips as computed by hand', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'rumedbench-repeats-')), 'run');
    const before = server().requests.length;
    await rumedbenchOk(...llm(out, '--repeats', '3', '--seed', '5'));
    const asked = server().requests.slice(before);
    expect(asked).toHaveLength(60);
    expect([...new Set(asked.map((r) => r.body.seed))].sort()).toEqual([5, 6, 7]);
    const samples = lines(join(out, 'samples.jsonl')) as {
      id: string;
      repeat: number;
      status: string;
      answer: string | null;
      gold: string;
      correct: boolean;
    }[];
    expect(samples).toHaveLength(60);
    const byId = new Map<string, typeof samples>();
    for (const s of samples) byId.set(s.id, [...(byId.get(s.id) ?? []), s]);
    // By hand: the most given readable answer, a tie to the one given first.
    const majority = (g: typeof samples) => {
      const answers = g.filter((s) => s.status === 'parsed').map((s) => s.answer as string);
      const count = (a: string) => answers.filter((x) => x === a).length;
      return answers.reduce<string | null>(
        (best, a) => (best === null || count(a) > count(best) ? a : best),
        null,
      );
    };
    const predictions = lines(join(out, 'predictions', 'RuMedDaNet.jsonl')) as {
      pairID: string;
      prediction: string | null;
    }[];
    expect(predictions.map((p) => [p.pairID, p.prediction])).toEqual(
      [...byId].map(([id, g]) => [id, majority(g)]),
    );
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    const groups = [...byId.values()];
    const mean =
      (100 * groups.reduce((a, g) => a + g.filter((s) => s.correct).length / g.length, 0)) / groups.length;
    const flipped = groups.filter(
      (g) => new Set(g.map((s) => (s.status === 'parsed' ? s.answer : null))).size > 1,
    );
    const r = summary.llm.repeats.RuMedDaNet;
    expect(r.k).toBe(3);
    expect(r.mean_accuracy).toBeCloseTo(mean, 10);
    expect(r.mean_accuracy_ci[0]).toBeLessThanOrEqual(mean);
    expect(r.mean_accuracy_ci[1]).toBeGreaterThanOrEqual(mean);
    expect([r.flipped, r.flipped_ids]).toEqual([flipped.length, flipped.map((g) => g[0]?.id)]);
    expect(r.consistency).toBeCloseTo((100 * (20 - flipped.length)) / 20, 10);
    expect(flipped.length).toBeGreaterThan(0);
    const voted = predictions.filter((p, i) => p.prediction === groups[i]?.[0]?.gold).length;
    expect(summary.tasks.RuMedDaNet.metrics.accuracy).toBeCloseTo((100 * voted) / 20, 10);
  });

  it('grows a run from one asking to three on --resume, asking only the new repeats; refuses repeats of loglik', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'rumedbench-repeats-')), 'run');
    const before = server().requests.length;
    await rumedbenchOk(...llm(out));
    expect(server().requests.length - before).toBe(20);
    await rumedbenchOk(...llm(out, '--repeats', '3', '--resume'));
    expect(server().requests.length - before).toBe(60);
    const bad = await rumedbench(...llm(join(out, 'x'), '--repeats', '2', '--mode', 'loglik'));
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining('repeats are for generation')]);
  });
});
