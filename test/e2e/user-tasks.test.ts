/**
 * Tasks defined in files (docs/adding-a-task.md): three definitions of other types (a three-label classification,
 * a multi-label task and a multiple-choice one) and their data, made here; `eval --tasks-dir` scores them exactly as
 * scikit-learn's documented examples say, `llm` reads a model's answers to them, `tasks check` names the line and
 * column of a mistake, and the shipped ECG2Pathology scores on gold given with `--gold`.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rumedbench, rumedbenchWith } from '../helpers/cli.js';
import { rumedbenchProcess, rumedbenchProcessOk } from '../helpers/cli-process.js';
import { type ChatRequestBody, type FakeOpenAI, startFakeOpenAI } from '../helpers/fake-openai.js';
import { tinyBert } from '../helpers/tiny-bert.js';

const jsonl = (rows: readonly object[]) => rows.map((r) => `${JSON.stringify(r)}\n`).join('');

const SEVERITY = ['лёгкая', 'средняя', 'тяжёлая'];
const RUBRICS = ['кардио', 'невро', 'пульмо'];

/**
 * scikit-learn's own examples (the `f1_score` reference page): y_true [0, 1, 2, 0, 1, 2], y_pred [0, 2, 1, 0, 0, 1]
 * gives macro F1 0.2667 and micro 0.3333; the multi-label y_true [[0,0,0],[1,1,1],[0,1,1]] against
 * y_pred [[0,0,0],[1,1,1],[1,1,0]] gives per-class F1 [0.667, 1, 0.667] (macro 0.7778), micro 0.8, and
 * `accuracy_score` (subset accuracy) 2/3.
 */
const TRI = { gold: [0, 1, 2, 0, 1, 2], pred: [0, 2, 1, 0, 0, 1] };
const MULTI = {
  gold: [
    [0, 0, 0],
    [1, 1, 1],
    [0, 1, 1],
  ],
  pred: [
    [0, 0, 0],
    [1, 1, 1],
    [1, 1, 0],
  ],
};
const rubrics = (row: number[]) => RUBRICS.filter((_, j) => row[j] === 1);

function writeTasks(root: string): { tasks: string; preds: string } {
  const tasks = join(root, 'tasks');
  const preds = join(root, 'preds');
  mkdirSync(join(tasks, 'data'), { recursive: true });
  mkdirSync(preds);
  writeFileSync(
    join(tasks, 'severity.yaml'),
    `schema: rumedbench.task/1
name: Severity
description: Тяжесть состояния по описанию.
licence: CC BY 4.0
files:
  train: data/severity-train.jsonl
  test: data/severity-test.jsonl
id: id
inputs: [text]
gold: label
type: classification
labels: [лёгкая, средняя, тяжёлая]
metrics: [accuracy, macro_f1, micro_f1]
prompts:
  - id: p1
    version: severity-v1
    instruction: Оцени тяжесть состояния пациента по описанию.
    template: "Описание: {text}"
`,
  );
  writeFileSync(
    join(tasks, 'data', 'severity-test.jsonl'),
    jsonl(TRI.gold.map((g, i) => ({ id: `t${i}`, text: `случай ${i}`, label: SEVERITY[g] }))),
  );
  writeFileSync(
    join(tasks, 'data', 'severity-train.jsonl'),
    jsonl(
      [...TRI.gold, ...TRI.gold].map((g, i) => ({ id: `r${i}`, text: `пример ${i}`, label: SEVERITY[g] })),
    ),
  );
  writeFileSync(
    join(preds, 'Severity.jsonl'),
    jsonl(TRI.pred.map((p, i) => ({ id: `t${i}`, prediction: SEVERITY[p] }))),
  );

  writeFileSync(
    join(tasks, 'rubrics.yaml'),
    `schema: rumedbench.task/1
name: Rubrics
description: Все подходящие рубрики для описания.
licence: CC BY 4.0
files:
  test: data/rubrics-test.jsonl
id: id
inputs: [text]
gold: classes
type: multilabel
classes: [кардио, невро, пульмо]
metrics: [macro_f1, micro_f1, accuracy]
`,
  );
  writeFileSync(
    join(tasks, 'data', 'rubrics-test.jsonl'),
    jsonl(MULTI.gold.map((g, i) => ({ id: `m${i}`, text: `описание ${i}`, classes: rubrics(g) }))),
  );
  writeFileSync(
    join(preds, 'Rubrics.jsonl'),
    jsonl(MULTI.pred.map((p, i) => ({ id: `m${i}`, prediction: rubrics(p) }))),
  );

  writeFileSync(
    join(tasks, 'exam.json'),
    JSON.stringify({
      schema: 'rumedbench.task/1',
      name: 'ExamABC',
      description: 'Вопросы экзамена с тремя вариантами ответа.',
      licence: 'CC BY 4.0',
      files: { test: 'data/exam-test.jsonl' },
      id: 'qid',
      inputs: ['question'],
      gold: 'answer',
      type: 'multiple_choice',
      options: { A: 'option_a', B: 'option_b', C: 'option_c' },
      metrics: ['accuracy'],
    }),
  );
  const examGold = ['A', 'B', 'C', 'A'];
  writeFileSync(
    join(tasks, 'data', 'exam-test.jsonl'),
    jsonl(
      examGold.map((g, i) => ({
        qid: `q${i}`,
        question: `вопрос ${i}`,
        option_a: 'один',
        option_b: 'два',
        option_c: 'три',
        answer: g,
      })),
    ),
  );
  // MedBench platform format: the gold field carries the answer.
  writeFileSync(
    join(preds, 'ExamABC.jsonl'),
    jsonl(['A', 'B', 'A', 'A'].map((a, i) => ({ qid: `q${i}`, answer: a }))),
  );
  return { tasks, preds };
}

/** `predict` with a saved model of the Signs task on its test records. */
const predictSigns = (dir: string, model: string) =>
  rumedbench('predict', '--tasks-dir', dir, '--model', model, '--input', join(dir, 'data', 'test.jsonl'));

interface Scored {
  tasks: Record<string, { n: number; metrics: Record<string, number>; score: number }>;
  overall: number | null;
  errors: { code: string; message: string }[];
}

describe('tasks defined in files', () => {
  let root: string;
  let dirs: { tasks: string; preds: string };
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'rumedbench-user-tasks-'));
    dirs = writeTasks(root);
  });

  it('eval --tasks-dir scores a three-label, a multi-label and a multiple-choice task as scikit-learn does', async () => {
    const r = await rumedbench('eval', dirs.preds, '--tasks-dir', dirs.tasks, '--json', '--bootstrap', '0');
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as Scored;
    expect(Object.keys(out.tasks)).toEqual(['ExamABC', 'Rubrics', 'Severity']);
    const s = out.tasks.Severity?.metrics ?? {};
    expect(s.accuracy).toBeCloseTo(100 / 3, 10);
    expect(s.macro_f1).toBeCloseTo(((0.8 + 0 + 0) / 3) * 100, 10); // 26.67
    expect(s.micro_f1).toBeCloseTo(100 / 3, 10);
    // The first metric is a defined task's score.
    expect(out.tasks.Severity?.score).toBeCloseTo(100 / 3, 10);
    const m = out.tasks.Rubrics?.metrics ?? {};
    expect(m.macro_f1).toBeCloseTo(((2 / 3 + 1 + 2 / 3) / 3) * 100, 10); // 77.78
    expect(m.micro_f1).toBeCloseTo(80, 10);
    expect(m.accuracy).toBeCloseTo(200 / 3, 10);
    expect(out.tasks.ExamABC?.metrics.accuracy).toBe(75);
    // No built-in task in the submission: no overall, and no "RuMedTop3 is missing" warnings.
    expect(out.overall).toBeNull();
    expect(r.stderr).not.toMatch(/MISSING_TASK/);
  });

  it('eval --reference on defined tasks only: no paper table of dashes, a line saying why', async () => {
    const r = await rumedbench(
      'eval',
      dirs.preds,
      '--tasks-dir',
      dirs.tasks,
      '--reference',
      '--bootstrap',
      '0',
    );
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain('(paper)');
    expect(r.stdout).toContain(
      "--reference: the paper's rows are of its own tasks, and none of them is scored here; not shown.",
    );
    expect(r.stdout).toMatch(/Severity/);
  });

  it('report: the summary gives each defined task a column after the overall it is no part of', async () => {
    const html = join(root, 'report.html');
    const r = await rumedbench(
      'report',
      dirs.preds,
      '--tasks-dir',
      dirs.tasks,
      '--out',
      html,
      '--bootstrap',
      '0',
    );
    expect(r.code, r.stderr).toBe(0);
    const text = readFileSync(html, 'utf8');
    const summary = text.slice(
      text.indexOf('class="sortable summary"'),
      text.indexOf('</table>', text.indexOf('class="sortable summary"')),
    );
    expect([...summary.matchAll(/<th scope="col"[^>]*>([^<]+)<\/th>/g)].map((m) => m[1])).toEqual([
      'Model',
      'RuMedTop3',
      'RuMedSymptomRec',
      'RuMedDaNet',
      'RuMedNLI',
      'RuMedNER',
      'Overall',
      'ExamABC',
      'Rubrics',
      'Severity',
    ]);
    // Its section draws no paper lines: the paper never scored it.
    const section = text.slice(text.indexOf('id="task-Severity"'));
    expect(section.slice(0, section.indexOf('</section>'))).not.toContain('Naive and Human');
  });

  it('compare: a task scored by accuracy gets McNemar on accuracy and on its score, macro F1 beside it or not', async () => {
    // The Severity answers against a system right on all six: 4 items only it has right, none the other way.
    const right = join(root, 'severity-right');
    mkdirSync(right, { recursive: true });
    writeFileSync(
      join(right, 'Severity.jsonl'),
      jsonl(TRI.gold.map((g, i) => ({ id: `t${i}`, prediction: SEVERITY[g] }))),
    );
    const only = join(root, 'severity-only');
    mkdirSync(only, { recursive: true });
    writeFileSync(join(only, 'Severity.jsonl'), readFileSync(join(dirs.preds, 'Severity.jsonl')));
    const args = ['compare', only, right, '--tasks-dir', dirs.tasks, '--bootstrap', '200'];
    const r = await rumedbench(...args, '--json');
    expect(r.code, r.stderr).toBe(0);
    const c = JSON.parse(r.stdout) as {
      tasks: {
        Severity: {
          metrics: Record<string, { p: number; test: string }>;
          score: { p: number; test: string };
        };
      };
    };
    const { metrics, score } = c.tasks.Severity;
    // Exact McNemar on 0 against 4 discordant items: 2 · (1/2)⁴.
    expect([
      metrics.accuracy?.p,
      metrics.accuracy?.test,
      score.p,
      score.test,
      metrics.macro_f1?.test,
    ]).toEqual([0.125, 'exact McNemar', 0.125, 'exact McNemar', 'approximate randomization']);
    const table = await rumedbench(...args);
    expect(table.stdout).toMatch(/Severity +accuracy .* 0\.125 +McNemar\n/);
  });

  it('baseline naive on a task of your own prints its scores, and no paper table: the paper has no row for it', async () => {
    const r = await rumedbench(
      ...['baseline', 'naive', '--tasks-dir', dirs.tasks, '--tasks', 'Severity'],
      ...['--out', join(root, 'severity-naive'), '--bootstrap', '0'],
    );
    expect(r.code, r.stderr).toBe(0);
    // Always "лёгкая": right on 2 of 6; F1 of лёгкая 2·2/(2·2 + 4) = 0.5, of the two others 0.
    expect(r.stdout.split('\n').slice(0, 7)).toEqual([
      'Task      n    metric  value  CI (off)',
      '--------  -  --------  -----  --------',
      'Severity  6  accuracy  33.33         –',
      'Severity  6  macro_f1  16.67         –',
      'Severity  6  micro_f1  33.33         –',
      'Severity  6     score  33.33         –',
      '',
    ]);
    expect(r.stdout).not.toContain('(paper)');
  });

  it('baseline tfidf learns a multi-label task one class at a time, and its saved model predicts the same', async () => {
    // Each class is said in words: "боль в груди" (кардио), "головокружение" (невро), "одышка" (пульмо).
    const said = ['боль в груди', 'головокружение', 'одышка'];
    const text = (g: number[], i: number) =>
      [`пациент ${i}`, ...RUBRICS.flatMap((_, j) => (g[j] ? [said[j] as string] : []))].join(', ');
    const sets = Array.from({ length: 8 }, (_, m) => [m & 1, (m >> 1) & 1, (m >> 2) & 1]);
    const dir = join(root, 'signs');
    mkdirSync(join(dir, 'data'), { recursive: true });
    writeFileSync(
      join(dir, 'signs.yaml'),
      readFileSync(join(dirs.tasks, 'rubrics.yaml'), 'utf8')
        .replace('name: Rubrics', 'name: Signs')
        .replace('  test: data/rubrics-test.jsonl', '  train: data/train.jsonl\n  test: data/test.jsonl'),
    );
    writeFileSync(
      join(dir, 'data', 'train.jsonl'),
      jsonl(
        Array.from({ length: 48 }, (_, i) => ({
          id: `r${i}`,
          text: text(sets[i % 8] as number[], i),
          classes: rubrics(sets[i % 8] as number[]),
        })),
      ),
    );
    writeFileSync(
      join(dir, 'data', 'test.jsonl'),
      jsonl(
        Array.from({ length: 8 }, (_, i) => ({
          id: `t${i}`,
          text: text(sets[i] as number[], 100 + i),
          classes: rubrics(sets[i] as number[]),
        })),
      ),
    );
    const out = join(root, 'signs-tfidf');
    const r = await rumedbench(
      'baseline',
      'tfidf',
      '--tasks-dir',
      dir,
      '--tasks',
      'Signs',
      '--out',
      out,
      '--save',
      join(out, 'models'),
      '--json',
      '--bootstrap',
      '0',
    );
    expect(r.code, r.stderr).toBe(0);
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as { evaluation: Scored };
    expect(summary.evaluation.tasks.Signs?.metrics).toEqual({ macro_f1: 100, micro_f1: 100, accuracy: 100 });
    const p = await predictSigns(dir, join(out, 'models', 'Signs'));
    expect(p.code, p.stderr).toBe(0);
    expect(p.stdout).toContain('кардио');
  });

  it('baseline encoder trains heads for defined tasks (one per class for a multi-label one) on a tiny random BERT', async () => {
    const out = join(root, 'severity-encoder');
    const r = await rumedbench(
      'baseline',
      'encoder',
      '--tasks-dir',
      dirs.tasks,
      '--tasks',
      'Severity',
      '--model',
      tinyBert(),
      '--cache',
      join(root, 'encoder-cache'),
      '--out',
      out,
      '--bootstrap',
      '0',
      '--json',
    );
    expect(r.code, r.stderr).toBe(0);
    const preds = readFileSync(join(out, 'predictions', 'Severity.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { prediction: string }).prediction);
    expect(preds).toHaveLength(6);
    for (const p of preds) expect(SEVERITY).toContain(p);

    // A multi-label task: one head per class; saved heads reload to the same predictions.
    const signs = join(root, 'signs');
    const multi = join(root, 'signs-encoder');
    const m = await rumedbench(
      'baseline',
      'encoder',
      '--tasks-dir',
      signs,
      '--tasks',
      'Signs',
      '--model',
      tinyBert(),
      '--cache',
      join(root, 'encoder-cache'),
      '--out',
      multi,
      '--save',
      join(multi, 'models'),
      '--bootstrap',
      '0',
      '--json',
    );
    expect(m.code, m.stderr).toBe(0);
    const answers = readFileSync(join(multi, 'predictions', 'Signs.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.stringify((JSON.parse(l) as { prediction: string[] }).prediction));
    expect(answers).toHaveLength(8);
    const again = await predictSigns(signs, join(multi, 'models', 'Signs'));
    expect(again.code, again.stderr).toBe(0);
    expect(
      again.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.stringify((JSON.parse(l) as { prediction: string[] }).prediction)),
    ).toEqual(answers);
  });

  it('reads the same definitions from RUMEDBENCH_TASKS and lists them with their source', async () => {
    const r = await rumedbenchWith({ RUMEDBENCH_TASKS: dirs.tasks }, 'tasks', '--json');
    expect(r.code, r.stderr).toBe(0);
    const list = JSON.parse(r.stdout) as { name: string; kind: string; source: string | null }[];
    // In this process earlier tests registered other folders' tasks too (one registry per process): this folder's.
    const mine = list.filter(
      (t) => t.source === null || !t.source.startsWith(root) || t.source.startsWith(dirs.tasks),
    );
    expect(mine.map((t) => [t.name, t.kind, t.source])).toEqual([
      ['RuMedTop3', 'ranking', null],
      ['RuMedSymptomRec', 'ranking', null],
      ['RuMedDaNet', 'classification', null],
      ['RuMedNLI', 'classification', null],
      ['RuMedNER', 'tagging', null],
      ['RuMedTest', 'classification', null],
      ['ExamABC', 'classification', join(dirs.tasks, 'exam.json')],
      ['Rubrics', 'multilabel', join(dirs.tasks, 'rubrics.yaml')],
      ['Severity', 'classification', join(dirs.tasks, 'severity.yaml')],
      ['ECG2Pathology', 'multilabel', expect.stringMatching(/tasks\/ECG2Pathology\.json$/)],
    ]);
  });

  it('tasks check names the line and column of a misspelt type, and each bad data line', async () => {
    const bad = join(root, 'bad');
    mkdirSync(bad);
    writeFileSync(
      join(bad, 'typo.yaml'),
      'schema: rumedbench.task/1\nname: Typo\ndescription: d\nlicence: l\ntype: clasification\nid: id\ninputs: [t]\ngold: g\nmetrics: [accuracy]\nfiles: {test: x.jsonl}\n',
    );
    const typo = await rumedbench('tasks', 'check', join(bad, 'typo.yaml'));
    expect(typo.code).toBe(1);
    expect(typo.stderr).toContain(
      `${join(bad, 'typo.yaml')}:5:7: type: unknown type "clasification"; expected one of classification, multiple_choice, ranking, tagging, multilabel`,
    );

    writeFileSync(
      join(bad, 'metric.yaml'),
      'schema: rumedbench.task/1\nname: Metric\ndescription: d\nlicence: l\ntype: classification\nlabels: [a, b]\nid: id\ninputs: [t]\ngold: g\nmetrics: [accuracy, entity_f1]\nfiles: {test: data.jsonl}\n',
    );
    writeFileSync(
      join(bad, 'data.jsonl'),
      jsonl([
        { id: '1', t: 'x', g: 'a' },
        { id: '2', g: 'b' },
        { id: '3', t: 'x', g: 'c' },
        { id: '1', t: 'y', g: 'b' },
      ]),
    );
    const metric = await rumedbench('tasks', 'check', join(bad, 'metric.yaml'));
    expect(metric.code).toBe(1);
    expect(metric.stderr).toContain(
      `${join(bad, 'metric.yaml')}:10:21: metrics.1: "entity_f1" does not fit a classification task; it takes accuracy, macro_f1, micro_f1`,
    );

    // The same definition, its metric mended: now its data file is read, every bad line named.
    writeFileSync(
      join(bad, 'metric.yaml'),
      readFileSync(join(bad, 'metric.yaml'), 'utf8').replace('accuracy, entity_f1', 'accuracy'),
    );
    const data = await rumedbench('tasks', 'check', join(bad, 'metric.yaml'));
    expect(data.code).toBe(1);
    const file = join(bad, 'data.jsonl');
    expect(data.stderr).toContain(`${file}:2 (id 2): field "t": `);
    expect(data.stderr).toMatch(
      new RegExp(`${file}:3 \\(id 3\\): field "g": .*"a"\\|"b"|${file}:3 \\(id 3\\): field "g"`),
    );
    expect(data.stderr).toContain(`${file}:4 (id 1): duplicate id; first seen on line 1`);

    const good = await rumedbench('tasks', 'check', dirs.tasks);
    expect(good.code, good.stderr).toBe(0);
    expect(good.stdout).toContain('Severity is valid (train 12, test 6 items)');
  });

  it('refuses a definition that takes the name of a built-in task', async () => {
    const clash = join(root, 'clash');
    mkdirSync(clash);
    writeFileSync(
      join(clash, 'nli.yaml'),
      'schema: rumedbench.task/1\nname: RuMedNLI\ndescription: d\nlicence: l\ntype: classification\nlabels: [a, b]\nid: id\ninputs: [t]\ngold: g\nmetrics: [accuracy]\nsplits: [test]\n',
    );
    const r = await rumedbench('eval', dirs.preds, '--tasks-dir', clash);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('"RuMedNLI" is the name of a built-in task; give yours another name');
  });

  it('tasks check reads the six built-in definitions and their data as it reads a user’s, naming a missing file', async () => {
    // A data folder made here: one valid record per split, RuMedNLI's train file left out (as on mirrors).
    const data = join(root, 'builtin-data');
    const records: Record<string, object> = {
      RuMedTop3: { idx: '1', symptoms: 'Болит спина.', code: 'M54' },
      RuMedSymptomRec: { idx: '1', symptoms: 'Температура.', code: 'кашель' },
      RuMedDaNet: { pairID: 'a', context: 'Текст.', question: 'Вопрос?', answer: 'да' },
      RuMedNLI: { pairID: 'a', ru_sentence1: 'Посылка.', ru_sentence2: 'Гипотеза.', gold_label: 'neutral' },
      RuMedNER: { idx: '1', tokens: ['Аспирин', 'помог'], ner_tags: ['B-Drugname', 'O'] },
      RuMedTest: { idx: '1', question: 'Вопрос?', 1: 'а', 2: 'б', 3: '', 4: 'г' },
    };
    const splits: Record<string, string[]> = {
      RuMedTop3: ['train', 'dev', 'test'],
      RuMedSymptomRec: ['train', 'dev', 'test'],
      RuMedDaNet: ['train', 'dev', 'test', 'private_test'],
      RuMedNLI: ['dev', 'test', 'private_test'],
      RuMedNER: ['train', 'dev', 'test'],
      RuMedTest: ['private_test'],
    };
    for (const [task, list] of Object.entries(splits)) {
      mkdirSync(join(data, task), { recursive: true });
      for (const split of list)
        writeFileSync(join(data, task, `${split}_v1.jsonl`), jsonl([records[task] as object]));
    }
    const shipped = join(import.meta.dirname, '..', '..', 'tasks');
    const r = await rumedbench('tasks', 'check', shipped, '--data', data);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual([
      `error: ${join(data, 'RuMedNLI', 'train_v1.jsonl')}: not found (files.train of ${join(shipped, 'RuMedNLI.json')})`,
    ]);
    expect(r.stdout.trim().split('\n')).toEqual([
      `${join(shipped, 'ECG2Pathology.json')}: ECG2Pathology is valid`,
      `${join(shipped, 'RuMedDaNet.json')}: RuMedDaNet is valid (train 1, dev 1, test 1, private_test 1 items)`,
      `${join(shipped, 'RuMedNER.json')}: RuMedNER is valid (train 1, dev 1, test 1 items)`,
      `${join(shipped, 'RuMedSymptomRec.json')}: RuMedSymptomRec is valid (train 1, dev 1, test 1 items)`,
      `${join(shipped, 'RuMedTest.json')}: RuMedTest is valid (private_test 1 items)`,
      `${join(shipped, 'RuMedTop3.json')}: RuMedTop3 is valid (train 1, dev 1, test 1 items)`,
    ]);

    // A bad line in a built-in task's file is named as in a user's: file, line, id and the rule.
    writeFileSync(
      join(data, 'RuMedTop3', 'dev_v1.jsonl'),
      jsonl([{ idx: '7', symptoms: 'Кашель.', code: 'j06' }]),
    );
    const bad = await rumedbench('tasks', 'check', join(shipped, 'RuMedTop3.json'), '--data', data);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(
      `${join(data, 'RuMedTop3', 'dev_v1.jsonl')}:1 (id 7): field "code": must be a three-character ICD-10 code such as "M54"; found "j06"`,
    );
  });

  describe('llm', () => {
    let server: FakeOpenAI;
    beforeAll(async () => {
      // A model that answers every severity question "средняя" (in prose) and every exam question with option B.
      server = await startFakeOpenAI({
        reply: (body: ChatRequestBody) => {
          const last = body.messages.at(-1)?.content ?? '';
          if (last.includes('Описание:'))
            return 'Судя по описанию, состояние средней тяжести.\nОтвечу так: средняя';
          if (last.includes('вопрос')) return 'Ответ: B';
          return 'Ответ: кардио, пульмо';
        },
      });
    });
    afterAll(async () => {
      await server?.close();
    });
    /** `llm` on the defined tasks against the loopback model. */
    const llm = (out: string, ...more: string[]) => [
      'llm',
      '--tasks-dir',
      dirs.tasks,
      '--base-url',
      server.url,
      '--out',
      out,
      '--no-progress',
      '--bootstrap',
      '0',
      ...more,
    ];

    it('asks a model a defined task and reads its answers with the parser of the type', async () => {
      const out = join(root, 'run');
      const r = await rumedbench(...llm(out, '--tasks', 'Severity,ExamABC,Rubrics', '--model', 'fake'));
      expect(r.code, r.stderr).toBe(0);
      const prompt = server.requests.find((q) =>
        q.body.messages.at(-1)?.content.includes('Описание: случай 0'),
      );
      expect(prompt?.body.messages.at(-1)?.content).toContain(
        '«Ответ: МЕТКА», где МЕТКА — одна из: лёгкая, средняя, тяжёлая',
      );
      const preds = (task: string) =>
        readFileSync(join(out, 'predictions', `${task}.jsonl`), 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as { prediction: unknown });
      expect(preds('Severity').map((p) => p.prediction)).toEqual(Array(6).fill('средняя'));
      expect(preds('ExamABC').map((p) => p.prediction)).toEqual(Array(4).fill('B'));
      expect(preds('Rubrics').map((p) => p.prediction)).toEqual(Array(3).fill(['кардио', 'пульмо']));
      const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as {
        tasks: Record<string, { metrics: Record<string, number> }>;
      };
      // Always "средняя": right on 2 of 6; always B: 1 of 4.
      expect(summary.tasks.Severity?.metrics.accuracy).toBeCloseTo(100 / 3, 10);
      expect(summary.tasks.ExamABC?.metrics.accuracy).toBe(25);

      // The manifest names the definitions: a process told nothing of them repeats the run from it.
      const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8')) as {
        spec: { task_files: string[] };
        command: string;
      };
      expect(manifest.spec.task_files).toEqual(
        ['severity.yaml', 'exam.json', 'rubrics.yaml'].map((f) => join(dirs.tasks, f)),
      );
      expect(manifest.command).toContain(`--tasks-dir ${join(dirs.tasks, 'severity.yaml')}`);
      const again = join(root, 'run-again');
      await rumedbenchProcessOk('run', join(out, 'manifest.json'), '--out', again);
      for (const task of ['Severity', 'ExamABC', 'Rubrics'])
        expect(readFileSync(join(again, 'predictions', `${task}.jsonl`), 'utf8')).toBe(
          readFileSync(join(out, 'predictions', `${task}.jsonl`), 'utf8'),
        );
    });

    it('scores a defined task by log-likelihood: the candidates are its labels, or its option keys', async () => {
      const out = join(root, 'run-loglik');
      const r = await rumedbench(
        ...llm(out, '--tasks', 'Severity,ExamABC', '--mode', 'loglik', '--model', 'base'),
      );
      expect(r.code, r.stderr).toBe(0);
      const samples = readFileSync(join(out, 'samples.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map(
          (l) =>
            JSON.parse(l) as { task: string; status: string; candidates?: { label: string; text: string }[] },
        );
      expect(samples).toHaveLength(10);
      expect(samples.every((s) => s.status === 'parsed')).toBe(true);
      expect(samples.find((s) => s.task === 'Severity')?.candidates?.map((c) => c.text)).toEqual([
        ' лёгкая',
        ' средняя',
        ' тяжёлая',
      ]);
      expect(samples.find((s) => s.task === 'ExamABC')?.candidates?.map((c) => c.label)).toEqual([
        'A',
        'B',
        'C',
      ]);
    });

    it('a plan names its tasks folder, relative to the plan, and runs its cells on the defined tasks', async () => {
      const planDir = join(root, 'plans');
      mkdirSync(planDir);
      writeFileSync(
        join(planDir, 'plan.yaml'),
        `name: defined
tasks_dir: ../tasks
tasks: [Severity]
defaults: {max_tokens: 64}
models:
  - {name: fake, provider: openai, base_url: "${server.url}", model: fake}
matrix: {shots: [0, 2]}
`,
      );
      const r = await rumedbenchProcess(
        'plan',
        'run',
        join(planDir, 'plan.yaml'),
        '--out',
        join(root, 'plan-runs'),
      );
      expect(r.code, r.stderr).toBe(0);
      for (const shots of ['shots=0', 'shots=2'])
        expect(
          readFileSync(join(root, 'plan-runs', 'fake', shots, 'predictions', 'Severity.jsonl'), 'utf8')
            .trim()
            .split('\n'),
        ).toHaveLength(6);
      // A tasks folder that is not there is a problem of the plan, with its place.
      writeFileSync(
        join(planDir, 'broken.yaml'),
        readFileSync(join(planDir, 'plan.yaml'), 'utf8').replace(
          'tasks_dir: ../tasks',
          'tasks_dir: ../missing',
        ),
      );
      const bad = await rumedbenchProcess('plan', 'check', join(planDir, 'broken.yaml'));
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain(
        `${join(planDir, 'broken.yaml')}:2:12: tasks_dir: ${join(root, 'missing')}: no such task definition file or folder`,
      );
    });
  });
});

describe('ECG2Pathology (shipped as a definition, no data)', () => {
  /** scikit-learn's `f1_score(Y, P, average='macro', zero_division=0)` on binarised labels, written out. */
  function sklearnMacroF1(gold: number[][], pred: number[][], classes: number): number {
    let total = 0;
    for (let c = 0; c < classes; c++) {
      let tp = 0;
      let fp = 0;
      let fn = 0;
      gold.forEach((g, i) => {
        const inG = g.includes(c);
        const inP = (pred[i] as number[]).includes(c);
        if (inG && inP) tp++;
        else if (inP) fp++;
        else if (inG) fn++;
      });
      const p = tp + fp === 0 ? 0 : tp / (tp + fp);
      const r = tp + fn === 0 ? 0 : tp / (tp + fn);
      total += p + r === 0 ? 0 : (2 * p * r) / (p + r);
    }
    return (total / classes) * 100;
  }

  it('eval --gold scores its macro F1 over the 73 classes as scikit-learn does, on synthetic records', async () => {
    const root = mkdtempSync(join(tmpdir(), 'rumedbench-ecg-'));
    mkdirSync(join(root, 'gold'));
    mkdirSync(join(root, 'preds'));
    let seed = 7;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const score = () =>
      rumedbench('eval', join(root, 'preds'), '--gold', join(root, 'gold'), '--json', '--bootstrap', '0');
    const n = 300;
    const names = Array.from({ length: n }, (_, i) => `${String(i).padStart(5, '0')}_hr`);
    const gold = names.map(() => {
      const s = new Set<number>();
      if (rand() < 0.7) s.add(37);
      while (s.size === 0 || rand() < 0.4) s.add(Math.floor(rand() * 73));
      return [...s].sort((a, b) => a - b);
    });
    // A model right on some classes, wrong on others, silent on some records (an empty set is an answer).
    const pred = gold.map((g) =>
      rand() < 0.1
        ? []
        : rand() < 0.6
          ? g
          : [Math.floor(rand() * 73), 37].filter((x, i, a) => a.indexOf(x) === i),
    );
    writeFileSync(
      join(root, 'gold', 'ECG2Pathology.jsonl'),
      jsonl(names.map((r, i) => ({ record_name: r, labels: gold[i] }))),
    );
    writeFileSync(
      join(root, 'preds', 'ECG2Pathology.jsonl'),
      jsonl(names.map((r, i) => ({ record_name: r, labels: pred[i] }))),
    );
    const r = await score();
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as Scored;
    expect(out.tasks.ECG2Pathology?.n).toBe(n);
    expect(out.tasks.ECG2Pathology?.metrics.macro_f1).toBeCloseTo(sklearnMacroF1(gold, pred, 73), 10);

    // The naive row (class 37 for every record) in closed form: F1 of class 37 is 2s / (s + n), the rest 0.
    writeFileSync(
      join(root, 'preds', 'ECG2Pathology.jsonl'),
      jsonl(names.map((r) => ({ record_name: r, labels: [37] }))),
    );
    const naive = JSON.parse((await score()).stdout) as Scored;
    const s = gold.filter((g) => g.includes(37)).length;
    expect(naive.tasks.ECG2Pathology?.metrics.macro_f1).toBeCloseTo(((2 * s) / (s + n) / 73) * 100, 10);

    // compare takes the same gold: the model against the naive row, the difference of the two macro F1s.
    mkdirSync(join(root, 'model'));
    writeFileSync(
      join(root, 'model', 'ECG2Pathology.jsonl'),
      jsonl(names.map((r, i) => ({ record_name: r, labels: pred[i] }))),
    );
    const c = await rumedbench(
      'compare',
      join(root, 'preds'),
      join(root, 'model'),
      '--gold',
      join(root, 'gold'),
      '--json',
      '--bootstrap',
      '200',
    );
    expect(c.code, c.stderr).toBe(0);
    const delta = (
      JSON.parse(c.stdout) as { tasks: Record<string, { metrics: Record<string, { delta: number }> }> }
    ).tasks.ECG2Pathology?.metrics.macro_f1?.delta;
    expect(delta).toBeCloseTo(sklearnMacroF1(gold, pred, 73) - ((2 * s) / (s + n) / 73) * 100, 10);
  });

  it('without gold, a file of it is checked and left unscored, saying how to score it', async () => {
    const root = mkdtempSync(join(tmpdir(), 'rumedbench-ecg-nogold-'));
    writeFileSync(
      join(root, 'ECG2Pathology.jsonl'),
      jsonl([
        { record_name: 'a', labels: [1, 99] },
        { record_name: 'b', labels: [2] },
      ]),
    );
    const bad = await rumedbench('eval', root);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('class 2 (99) is not a class of this task');
    writeFileSync(join(root, 'ECG2Pathology.jsonl'), jsonl([{ record_name: 'a', labels: [1, 72] }]));
    const valid = await rumedbench('eval', root);
    expect(valid.stdout).toContain(
      'ECG2Pathology: not scored: no gold for ECG2Pathology here (its host holds it; `eval --gold DIR` scores it on ECG2Pathology.jsonl in DIR)',
    );
    // Valid, but nothing scored where a score was asked for: exit 1, as for an empty folder (issue #45).
    expect([valid.code, valid.stderr]).toEqual([
      1,
      expect.stringContaining(
        `error: ${root}: no task was scored: no gold here for ECG2Pathology (expected each task's gold: in its data file, or as <Task>.jsonl in a folder given with --gold DIR) [NOTHING_SCORED]`,
      ),
    ]);
  });
});

describe("a hospital's own test set (issue #45)", () => {
  // Each test its own task name: the in-process CLI keeps the tasks an earlier test registered.
  let made = 0;
  const definition = (name: string) => `schema: rumedbench.task/1
name: ${name}
description: Нужна ли госпитализация пациенту?
files:
  test: data/test.jsonl
id: qid
inputs: [question]
gold: answer
type: classification
labels: [да, нет]
metrics: [accuracy]
`;
  const n = 40;
  const qid = (i: number) => `q${i}`;
  const goldOf = (i: number) => (i % 4 === 0 ? 'да' : 'нет');

  /** The definition, its test data (with or without the answer field) and predictions right on items i % 2 = 0. */
  function hospital(withGold: boolean): {
    name: string;
    def: string;
    data: string;
    preds: string;
    root: string;
  } {
    made += 1;
    const name = `RuHosp${made}`;
    const root = mkdtempSync(join(tmpdir(), 'rumedbench-hospital-'));
    mkdirSync(join(root, 'data'));
    mkdirSync(join(root, 'preds'));
    const def = join(root, `${name}.yaml`);
    writeFileSync(def, definition(name));
    const data = join(root, 'data', 'test.jsonl');
    writeFileSync(
      data,
      jsonl(
        Array.from({ length: n }, (_, i) => ({
          qid: qid(i),
          question: `Жалобы пациента № ${i}`,
          ...(withGold ? { answer: goldOf(i) } : {}),
        })),
      ),
    );
    const wrong = (g: string) => (g === 'да' ? 'нет' : 'да');
    writeFileSync(
      join(root, 'preds', `${name}.jsonl`),
      jsonl(
        Array.from({ length: n }, (_, i) => ({
          qid: qid(i),
          prediction: i % 2 === 0 ? goldOf(i) : wrong(goldOf(i)),
        })),
      ),
    );
    return { name, def, data, preds: join(root, 'preds'), root };
  }

  function goldDir(root: string, name: string, count = n): string {
    const dir = join(root, 'gold');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, `${name}.jsonl`),
      jsonl(Array.from({ length: count }, (_, i) => ({ qid: qid(i), answer: goldOf(i) }))),
    );
    return dir;
  }

  it('exits 1 where nothing is scored: a defined task whose host holds its data, without --gold', async () => {
    const { name, root, preds } = hospital(true);
    const held = join(root, 'held.yaml');
    writeFileSync(held, definition(name).replace('files:\n  test: data/test.jsonl\n', 'splits: [test]\n'));
    const r = await rumedbench('eval', preds, '--tasks-dir', held, '--bootstrap', '0');
    // One warning that it is validated and not scored, one error that nothing is: no error per line.
    expect([r.code, r.stdout.split('\n')[0], r.stderr.trim().split('\n')]).toEqual([
      1,
      'No task scored.',
      [
        `error: ${preds}: no task was scored: no gold here for ${name} (expected each task's gold: in its data file, or as <Task>.jsonl in a folder given with --gold DIR) [NOTHING_SCORED]`,
        `warning: ${join(preds, `${name}.jsonl`)}: no gold for ${name} here (its host holds it; \`eval --gold DIR\` scores it on ${name}.jsonl in DIR); validated, not scored [NO_GOLD]`,
      ],
    ]);
    // The same with its gold: scored, exit 0.
    const gold = goldDir(root, name);
    const scored = await rumedbench('eval', preds, '--tasks-dir', held, '--gold', gold, '--bootstrap', '0');
    expect([scored.code, scored.stderr]).toEqual([0, '']);
  });

  it('refuses a data file given to --tasks-dir once, as a data file', async () => {
    const { data, preds } = hospital(true);
    const r = await rumedbench('eval', preds, '--tasks-dir', data);
    expect([r.code, r.stderr]).toEqual([
      1,
      `error: ${data}: this is a data file (JSONL: one record per line), not a task definition; a definition (.yaml, .yml or .json) names it under files:\n`,
    ]);
  });

  it('reads test data without its gold field where --gold holds it: tasks check --gold and eval --gold', async () => {
    const { name, def, data, preds, root } = hospital(false);
    const missing =
      'field "answer" is missing (required in the test split, unless its gold is held apart: `--gold DIR`)';
    const unchecked = await rumedbench('tasks', 'check', def);
    expect([unchecked.code, unchecked.stderr.split('\n')[0]]).toEqual([
      1,
      `error: ${data}:1 (id q0): ${missing}`,
    ]);
    const bare = await rumedbench('eval', preds, '--tasks-dir', def, '--bootstrap', '0');
    expect([bare.code, bare.stderr]).toEqual([1, expect.stringContaining(`${data}:1 (id q0): ${missing}`)]);

    // The gold folder short of one id: named, with the data line that has no gold either.
    const gold = goldDir(root, name, n - 1);
    const short = await rumedbench('tasks', 'check', def, '--gold', gold);
    expect([short.code, short.stderr]).toEqual([
      1,
      `error: ${join(gold, `${name}.jsonl`)}: no gold for id q39 (test record, ${data}:40, which has none)\n`,
    ]);
    // eval on that gold says how much of the split it lacks, not "a closed test", and scores nothing (exit 1).
    const partial = await rumedbench('eval', preds, '--tasks-dir', def, '--gold', gold, '--bootstrap', '0');
    expect([partial.code, partial.stderr]).toEqual([
      1,
      expect.stringContaining(
        `${join(preds, `${name}.jsonl`)}: no gold for 1 of ${n} items of the test split of ${name} (e.g. id q39): validated, not scored [NO_GOLD]`,
      ),
    ]);
    goldDir(root, name);
    const checked = await rumedbench('tasks', 'check', def, '--gold', gold);
    expect([checked.code, checked.stdout, checked.stderr]).toEqual([
      0,
      `${def}: ${name} is valid (test ${n} items)\n`,
      '',
    ]);
    const scored = await rumedbench(
      'eval',
      preds,
      '--tasks-dir',
      def,
      '--gold',
      gold,
      '--bootstrap',
      '0',
      '--json',
    );
    expect(scored.code, scored.stderr).toBe(0);
    const result = JSON.parse(scored.stdout) as Scored;
    expect([result.tasks[name]?.n, result.tasks[name]?.metrics, result.errors]).toEqual([
      n,
      { accuracy: 50 },
      [],
    ]);
  });
});
