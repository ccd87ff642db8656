/**
 * `rumedbench baseline bilstm`, `predict` on a saved BiLSTM and `submit` of its run folder to a `serve` on loopback,
 * run as a user runs them, on the tests' own data.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rumedbenchWith } from '../helpers/cli.js';
import { writeFixtureData } from '../helpers/fixture-data.js';
import { startServe } from '../helpers/server.js';

/** Fixture data (train 8, dev 2, test 4 records a task), an empty run folder, and the environment that reads them. */
function workspace(name: string) {
  const data = writeFixtureData(mkdtempSync(join(tmpdir(), 'rumedbench-bilstm-data-')), { n: 4 });
  return {
    data,
    out: mkdtempSync(join(tmpdir(), `rumedbench-bilstm-${name}-`)),
    env: { RUMEDBENCH_DATA: data },
  };
}

describe('baseline bilstm', () => {
  it('trains the tagger, says in one line why RuMedNLI and RuMedTest are not trained, writes a run folder eval, rank and report read, and saves a model predict uses', {
    timeout: 300_000,
  }, async () => {
    const { data, out, env } = workspace('out');
    const r = await rumedbenchWith(
      env,
      'baseline',
      'bilstm',
      '--tasks',
      'RuMedNER,RuMedNLI,RuMedTest',
      '--epochs',
      '2',
      '--out',
      out,
      '--save',
      join(out, 'models'),
      '--bootstrap',
      '0',
      '--json',
    );
    expect(r.code, r.stderr).toBe(0);
    const { runs } = JSON.parse(r.stdout) as {
      runs: { task: string; skipped?: string; trainedOn?: unknown }[];
    };
    expect(runs.map((x) => [x.task, x.skipped ?? x.trainedOn])).toEqual([
      ['RuMedNER', { split: 'train', records: 8 }],
      [
        'RuMedNLI',
        `${join(data, 'RuMedNLI', 'train_v1.jsonl')} is missing (--train-split dev trains on dev instead, reported as such)`,
      ],
      [
        'RuMedTest',
        'a multiple-choice task with no training split: the BiLSTM baseline has nothing to learn from',
      ],
    ]);
    expect(r.stderr.split('\n').filter((l) => l.includes('RuMedNLI'))).toHaveLength(1);
    expect(r.stderr).toMatch(/RuMedNER: epoch 1\/2: train loss \d\.\d{4}, dev loss \d\.\d{4}/);
    expect(r.stderr).toMatch(/RuMedNER: epoch 2\/2: /);
    const predictions = readFileSync(join(out, 'predictions', 'RuMedNER.jsonl'), 'utf8')
      .trim()
      .split('\n');
    const test = readFileSync(join(data, 'RuMedNER', 'test_v1.jsonl'), 'utf8')
      .trim()
      .split('\n');
    expect(predictions).toHaveLength(test.length);
    for (const [i, line] of predictions.entries()) {
      const p = JSON.parse(line) as { prediction: string[] };
      const g = JSON.parse(test[i] as string) as { tokens: string[] };
      expect(p.prediction).toHaveLength(g.tokens.length);
    }
    const ev = await rumedbenchWith(env, 'eval', out, '--bootstrap', '0', '--json');
    expect(ev.code, ev.stderr).toBe(0);
    expect(Object.keys(JSON.parse(ev.stdout).tasks)).toEqual(['RuMedNER']);
    // rank (beside the naive baseline's run) and report read the BiLSTM's run folder as any other run.
    const naive = mkdtempSync(join(tmpdir(), 'rumedbench-bilstm-naive-'));
    const nv = await rumedbenchWith(
      env,
      'baseline',
      'naive',
      '--tasks',
      'RuMedNER',
      '--out',
      naive,
      '--bootstrap',
      '0',
    );
    expect(nv.code, nv.stderr).toBe(0);
    const ranked = await rumedbenchWith(env, 'rank', out, naive, '--bootstrap', '0', '--json');
    expect(ranked.code, ranked.stderr).toBe(0);
    expect(ranked.stdout).toContain('RuMedNER');
    const report = join(out, 'report.html');
    const rep = await rumedbenchWith(env, 'report', out, '--out', report);
    expect(rep.code, rep.stderr).toBe(0);
    expect(readFileSync(report, 'utf8')).toContain('RuMedNER');

    expect(existsSync(join(out, 'models', 'RuMedNER', 'model.json'))).toBe(true);
    const p = await rumedbenchWith(
      env,
      'predict',
      '--model',
      join(out, 'models', 'RuMedNER'),
      '--text',
      'Болит голова после таблеток',
    );
    expect(p.code, p.stderr).toBe(0);
    expect((JSON.parse(p.stdout) as { prediction: string[] }).prediction).toHaveLength(4);
  });

  it('trains a classifier for one epoch and submits its run folder: the board shows the scores eval gives it', {
    timeout: 300_000,
  }, async () => {
    const { out, env } = workspace('submit');
    const r = await rumedbenchWith(
      env,
      ...['baseline', 'bilstm', '--tasks', 'RuMedDaNet,RuMedSymptomRec', '--epochs', '1', '--out', out],
      ...['--bootstrap', '0', '--quiet'],
    );
    expect(r.code, r.stderr).toBe(0);
    const ev = await rumedbenchWith(env, 'eval', out, '--bootstrap', '0', '--json');
    expect(ev.code, ev.stderr).toBe(0);
    const scored = JSON.parse(ev.stdout) as { tasks: Record<string, { score: number }> };
    const board = await startServe(['--db', join(out, 'board.sqlite')], env);
    try {
      const sent = await rumedbenchWith(env, 'submit', out, '--server', board.url, '--json');
      expect(sent.code, sent.stderr).toBe(0);
      const { id } = JSON.parse(sent.stdout) as { id: string };
      const entries = (
        (await (await fetch(`${board.url}/api/boards/public`)).json()) as {
          entries: {
            id: string;
            kind: string;
            description: string;
            tasks: Record<string, { score: number }>;
          }[];
        }
      ).entries;
      expect(entries.map((e) => [e.id, e.kind])).toEqual([[id, 'baseline']]);
      expect(entries[0]?.description).toMatch(
        /^rumedbench \S+ baseline bilstm: seed=0, epochs=1, train_split="train"$/,
      );
      // The board scored the uploaded files itself: the same scores eval gives the run folder, task by task.
      const onBoard = Object.fromEntries(
        Object.entries(entries[0]?.tasks ?? {}).map(([t, v]) => [t, v.score]),
      );
      expect(onBoard).toEqual({
        RuMedDaNet: scored.tasks.RuMedDaNet?.score,
        RuMedSymptomRec: scored.tasks.RuMedSymptomRec?.score,
      });
      const page = await (await fetch(`${board.url}/submissions/${id}`)).text();
      expect(page).toContain('RuMedSymptomRec');
      expect(page).toContain(Number(scored.tasks.RuMedSymptomRec?.score).toFixed(2));
    } finally {
      await board.stop();
    }
  });

  it('refuses --epochs and --patience for the other baselines', async () => {
    const r = await rumedbenchWith({}, 'baseline', 'naive', '--epochs', '2');
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('--epochs: only for baseline bilstm');
  });

  it('refuses --threads above 2 rather than ignore it: one thread per direction', async () => {
    const r = await rumedbenchWith({}, 'baseline', 'bilstm', '--threads', '3');
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('method bilstm runs at most 2 threads, one per direction of each layer');
  });
});
