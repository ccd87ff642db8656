/**
 * A private test set, end to end (docs/adding-a-task.md, "Gold held apart"): a hospital's test split carries no
 * answers, its gold lives in another folder, and `llm`, `baseline`, `predict`, `plan` and `eval` of the run folder all
 * take `--gold DIR`. The invariant: the held-apart gold scores the run, and never enters the run folder (no
 * prediction, sample, log, manifest or zip entry carries it).
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { unzipSync } from 'fflate';
import { beforeAll, describe, expect, it } from 'vitest';
import { rumedbench } from '../helpers/cli.js';
import { useFakeOpenAI } from '../helpers/fake-openai.js';

const jsonl = (rows: readonly object[]) => rows.map((r) => `${JSON.stringify(r)}\n`).join('');

/** Six questions; the model says «да» exactly where the question speaks of pain. */
const QUESTIONS = [
  'Боль в груди, одышка',
  'Насморк два дня',
  'Боль в животе справа',
  'Сыпь на руках',
  'Кашель неделю',
  'Головная боль и рвота',
];
/** The held-apart gold: the model is right on items 0, 1, 2, 3 and wrong on 4 and 5 (4 of 6). */
const GOLD = ['да', 'нет', 'да', 'нет', 'да', 'нет'];
/** Another gold for the same items, every label flipped: the model is right on 2 of 6. */
const FLIPPED = GOLD.map((g) => (g === 'да' ? 'нет' : 'да'));
const MODEL_ACCURACY = (4 / 6) * 100;
/** `baseline naive` answers the first label, «да»: right on 0, 2, 4 (3 of 6). */
const NAIVE_ACCURACY = 50;

/** Every text a run folder holds, zip entries included, by path. */
function folderTexts(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.zip'))
        for (const [entry, bytes] of Object.entries(unzipSync(readFileSync(p))))
          out.set(`${p}!${entry}`, Buffer.from(bytes).toString('utf8'));
      else out.set(p, readFileSync(p, 'utf8'));
    }
  };
  walk(dir);
  return out;
}

/** What varies between two runs of one spec whatever the gold: times, latencies, the gold folder's own name. */
const VOLATILE = [
  /"(at|created|started|finished|updated)": ?"[^"]*"/g,
  /"(latencyMs|latency_ms|seconds)": ?[0-9.e+-]+/g,
];
const mask = (text: string) =>
  VOLATILE.reduce((t, re) => t.replace(re, (m) => m.replace(/:.*/, ':~')), text).replace(
    /\b(gold|models)-[ab]\b/g,
    '$1',
  );

/**
 * The files of two run folders, made by the same command with two different held-apart gold folders, that differ
 * (times and the gold folder's name aside). The scores in summary.json are the only thing the gold may change.
 */
function differByGold(a: string, b: string): string[] {
  const ta = folderTexts(a);
  const tb = folderTexts(b);
  const names = new Set([...ta.keys()].map((k) => k.slice(a.length)));
  for (const k of tb.keys()) names.add(k.slice(b.length));
  return [...names]
    .filter((n) => !n.endsWith('/summary.json'))
    .filter((n) => {
      const x = ta.get(a + n);
      const y = tb.get(b + n);
      return x === undefined || y === undefined || mask(x) !== mask(y);
    })
    .sort();
}

describe('a private test set: gold held apart, end to end', () => {
  const server = useFakeOpenAI({
    reply: (body) => (/[Бб]оль/.test(body.messages.at(-1)?.content ?? '') ? 'да' : 'нет'),
  });
  let root: string;
  let def: string;
  let gold: string;
  let other: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'rumedbench-private-'));
    mkdirSync(join(root, 'held', 'data'), { recursive: true });
    mkdirSync(join(root, 'held', 'gold-a'));
    mkdirSync(join(root, 'held', 'gold-b'));
    def = join(root, 'held', 'RuHospQA.yaml');
    gold = join(root, 'held', 'gold-a');
    other = join(root, 'held', 'gold-b');
    writeFileSync(
      def,
      `schema: rumedbench.task/1
name: RuHospQA
description: Нужна ли госпитализация?
files:
  test: data/test.jsonl
  private_test: data/private.jsonl
id: qid
inputs: [question]
gold: answer
type: classification
labels: [да, нет]
metrics: [accuracy]
`,
    );
    const data = jsonl(QUESTIONS.map((question, i) => ({ qid: `q${i}`, question })));
    writeFileSync(join(root, 'held', 'data', 'test.jsonl'), data);
    writeFileSync(join(root, 'held', 'data', 'private.jsonl'), data);
    writeFileSync(join(gold, 'RuHospQA.jsonl'), jsonl(GOLD.map((answer, i) => ({ qid: `q${i}`, answer }))));
    writeFileSync(
      join(other, 'RuHospQA.jsonl'),
      jsonl(FLIPPED.map((answer, i) => ({ qid: `q${i}`, answer }))),
    );
  });

  const llmArgs = (out: string, ...more: string[]) => [
    'llm',
    '--tasks-dir',
    def,
    '--tasks',
    'RuHospQA',
    '--model',
    'm',
    '--base-url',
    server().url,
    '--out',
    out,
    '--bootstrap',
    '0',
    '--no-progress',
    ...more,
  ];

  it('without --gold, a test split without answers is refused, saying --gold', async () => {
    const r = await rumedbench(...llmArgs(join(root, 'runs', 'refused')));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('--gold DIR');
  });

  it('llm --gold runs the test split and scores it on the held gold; the gold never enters the run folder', async () => {
    const out = join(root, 'runs', 'llm');
    const r = await rumedbench(...llmArgs(out, '--gold', gold, '--json'));
    expect(r.stderr).not.toContain('error');
    expect(r.code).toBe(0);
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    expect(summary.tasks.RuHospQA.metrics).toEqual({ accuracy: MODEL_ACCURACY });
    // The same run on the flipped gold: only the score differs; nothing of the run folder depends on the gold.
    const flipped = join(root, 'runs', 'llm-b');
    expect((await rumedbench(...llmArgs(flipped, '--gold', other, '--json'))).code).toBe(0);
    const second = JSON.parse(readFileSync(join(flipped, 'summary.json'), 'utf8'));
    expect(second.tasks.RuHospQA.metrics).toEqual({ accuracy: (2 / 6) * 100 });
    expect(differByGold(out, flipped)).toEqual([]);
    // The run folder scored again, by `eval`: the same number from the same held gold.
    const e = await rumedbench('eval', out, '--tasks-dir', def, '--gold', gold, '--bootstrap', '0', '--json');
    expect(e.code).toBe(0);
    expect(JSON.parse(e.stdout).tasks.RuHospQA.metrics).toEqual({ accuracy: MODEL_ACCURACY });
  });

  it('llm --split private_test --gold, and eval of its run folder on that split', async () => {
    const out = join(root, 'runs', 'llm-private');
    const r = await rumedbench(...llmArgs(out, '--split', 'private_test', '--gold', gold));
    expect(r.code).toBe(0);
    const flipped = join(root, 'runs', 'llm-private-b');
    expect((await rumedbench(...llmArgs(flipped, '--split', 'private_test', '--gold', other))).code).toBe(0);
    expect(differByGold(out, flipped)).toEqual([]);
    const e = await rumedbench(
      'eval',
      out,
      '--split',
      'private_test',
      '--tasks-dir',
      def,
      '--gold',
      gold,
      '--bootstrap',
      '0',
      '--json',
    );
    expect(e.stderr).toBe('');
    expect(e.code).toBe(0);
    expect(JSON.parse(e.stdout).tasks.RuHospQA.metrics).toEqual({ accuracy: MODEL_ACCURACY });
  });

  it('baseline naive --gold, then predict and eval --gold, score on the held gold; the gold never enters a folder', async () => {
    const naive = (out: string, goldDir: string, model: string) =>
      rumedbench(
        'baseline',
        'naive',
        '--tasks-dir',
        def,
        '--tasks',
        'RuHospQA',
        '--out',
        out,
        '--bootstrap',
        '0',
        '--gold',
        goldDir,
        '--save',
        model,
      );
    const out = join(root, 'runs', 'naive');
    const model = join(root, 'models-a');
    const r = await naive(out, gold, model);
    expect(r.stderr).not.toContain('error');
    expect(r.code).toBe(0);
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    expect(summary.evaluation.tasks.RuHospQA.metrics).toEqual({ accuracy: NAIVE_ACCURACY });
    expect((await naive(join(root, 'runs', 'naive-b'), other, join(root, 'models-b'))).code).toBe(0);
    expect(differByGold(out, join(root, 'runs', 'naive-b'))).toEqual([]);
    expect(differByGold(model, join(root, 'models-b'))).toEqual([]);
    // `predict` reads records without gold (its input is any JSONL of the task) and writes predictions only;
    // `eval --gold` scores what it wrote.
    const p = join(root, 'runs', 'predict');
    mkdirSync(p, { recursive: true });
    const q = await rumedbench(
      'predict',
      '--model',
      join(model, 'RuHospQA'),
      '--tasks-dir',
      def,
      '--input',
      join(root, 'held', 'data', 'test.jsonl'),
    );
    expect(q.stderr).not.toContain('error');
    expect(q.code).toBe(0);
    writeFileSync(join(p, 'RuHospQA.jsonl'), q.stdout);
    const e = await rumedbench('eval', p, '--tasks-dir', def, '--gold', gold, '--bootstrap', '0', '--json');
    expect(JSON.parse(e.stdout).tasks.RuHospQA.metrics).toEqual({ accuracy: NAIVE_ACCURACY });
  });

  it('a plan takes gold: its cells run and score on the held gold', async () => {
    const planFile = join(root, 'plan.yaml');
    writeFileSync(
      planFile,
      `name: hospital
tasks: [RuHospQA]
tasks_dir: held/RuHospQA.yaml
defaults: { gold: ./held/gold-a, bootstrap: 0 }
models:
  - name: m
    provider: openai
    model: m
    base_url: ${server().url}
`,
    );
    const r = await rumedbench('plan', 'run', planFile, '--out', join(root, 'plan-runs'));
    expect(r.stderr).not.toContain('error');
    expect(r.code).toBe(0);
    const cell = join(root, 'plan-runs', 'm', 'default');
    const summary = JSON.parse(readFileSync(join(cell, 'summary.json'), 'utf8'));
    expect(summary.tasks.RuHospQA.metrics).toEqual({ accuracy: MODEL_ACCURACY });
    // The plan's report scores on the same gold, and lists no gold beside an answer.
    const report = readFileSync(join(root, 'plan-runs', 'report.html'), 'utf8');
    expect(report).toContain('66.67');
  });
});
