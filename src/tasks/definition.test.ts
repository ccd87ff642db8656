import { describe, expect, it } from 'vitest';
import { TaskDefinitionError } from '../errors.js';
import { compileTask, taskFromObject } from './definition.js';
import { parseTaskFile } from './definition-file.js';
import { parseLabel, parseLabelList } from './parse.js';
import { checkRecord } from './record.js';
import { getTask, isTaskName } from './registry.js';

const HEAD =
  'schema: rumedbench.task/1\nname: T\ndescription: d\nlicence: l\nid: id\ninputs: [text]\ngold: g\nsplits: [test]\n';

/** The problems a definition's text gets, as the CLI prints them. */
function problems(text: string): readonly string[] {
  try {
    parseTaskFile(text, 't.yaml');
    return [];
  } catch (e) {
    if (e instanceof TaskDefinitionError) return e.problems;
    throw e;
  }
}

describe('task definition files', () => {
  it('names the line and column of every problem, all at once', () => {
    expect(
      problems(
        `${HEAD}type: ranking\nk: 20\nmetrics: [hit_at_k, macro_f1]\nlabel_pattern: "[A-"\ncolour: red\n`,
      ),
    ).toEqual([
      't.yaml:10:4: k: Too big: expected number to be <=10',
      't.yaml:13:1: colour: unknown key for a ranking task',
    ]);
    expect(problems(`${HEAD}type: ranking\nmetrics: [hit_at_k, macro_f1]\nlabel_pattern: "[A-"\n`)).toEqual([
      't.yaml:10:21: metrics.1: "macro_f1" does not fit a ranking task; it takes accuracy, hit_at_k',
      expect.stringMatching(/^t\.yaml:11:16: label_pattern: not a regular expression: /),
    ]);
    expect(problems(`${HEAD}type: multilabel\nclasses: [a, b, a]\nmetrics: [macro_f1]\n`)).toEqual([
      't.yaml:10:10: classes: a label is listed twice',
    ]);
    expect(problems('schema: rumedbench.task/1\nname: [unclosed\n')).toEqual([
      't.yaml:3:1: Flow sequence in block collection must be sufficiently indented and end with a ]',
    ]);
    expect(
      problems(`${HEAD}type: tagging\ntokens: words\nentity_types: [DRUG]\nmetrics: [entity_f1]\n`),
    ).toEqual(['t.yaml:10:9: tokens: the tokens field "words" must be one of the inputs']);
  });

  it('compiles each type into the shape the scorer reads', () => {
    const rank = compileTask(
      parseTaskFile(
        `${HEAD}type: ranking\nk: 5\nlabels: [A1, B2, C3]\nmetrics: [accuracy, hit_at_k]\n`,
        '/x/t.yaml',
      ),
      '/x/t.yaml',
    );
    expect(rank).toMatchObject({
      kind: 'ranking',
      k: 5,
      metrics: ['accuracy', 'hit_at_5'],
      scoreOf: 'first',
    });
    expect(rank.kind === 'ranking' && [rank.labelPattern.test('B2'), rank.labelPattern.test('B22')]).toEqual([
      true,
      false,
    ]);
    const mc = taskFromObject(
      {
        schema: 'rumedbench.task/1',
        name: 'MC',
        description: 'd',
        licence: 'l',
        id: 'id',
        inputs: ['q'],
        gold: 'a',
        type: 'multiple_choice',
        options: { '1': 'o1', '2': 'o2' },
        metrics: ['accuracy'],
        files: { test: 'data/test.jsonl' },
      },
      '/defs/mc.json',
    );
    expect(mc).toMatchObject({
      kind: 'classification',
      labels: ['1', '2'],
      choices: { questionField: 'q', optionFields: { '1': 'o1', '2': 'o2' } },
      files: { test: '/defs/data/test.jsonl' },
      splits: ['test'],
    });
    expect(mc.prompt.render({ q: 'Вопрос?', o1: 'да', o2: 'нет' })).toBe('q: Вопрос?\n1. да\n2. нет');
    expect(mc.prompt.parse('Думаю, верен второй.\nОтвет: 2', {}, {})).toEqual({
      status: 'parsed',
      answer: '2',
      notes: [],
    });
  });

  it('checks records against the type: gold outside the labels, tags per token', () => {
    const tag = compileTask(
      parseTaskFile(
        `${HEAD.replace('[text]', '[tokens]')}type: tagging\ntokens: tokens\nentity_types: [DRUG]\nmetrics: [token_accuracy, entity_f1]\n`,
        't.yaml',
      ),
      't.yaml',
    );
    const check = (task: typeof tag, value: unknown) => checkRecord(task.recordFields, value);
    expect(check(tag, { id: '1', tokens: ['a', 'b'], g: ['B-DRUG', 'O'] }).ok).toBe(true);
    expect(check(tag, { id: '1', tokens: ['a', 'b'], g: ['B-DRUG'] })).toEqual({
      ok: false,
      issues: [{ path: 'g', message: 'must have one tag per token of "tokens" (1 tags, 2 tokens)' }],
    });
    expect(check(tag, { id: '1', tokens: ['a'], g: ['B-DOSE'] })).toEqual({
      ok: false,
      issues: [{ path: 'g.0', message: 'must be one of O, B-DRUG, I-DRUG; found "B-DOSE"' }],
    });
    const ml = compileTask(
      parseTaskFile(`${HEAD}type: multilabel\nclasses: [0, 1, 2]\nmetrics: [macro_f1]\n`, 't.yaml'),
      't.yaml',
    );
    // Class indices as numbers, in any order: read as the task's classes, in its order.
    expect(check(ml, { id: '1', text: 'x', g: [2, 0] })).toEqual({
      ok: true,
      data: { id: '1', text: 'x', g: ['0', '2'] },
    });
    expect(check(ml, { id: '1', text: 'x', g: [3] })).toEqual({
      ok: false,
      issues: [{ path: 'g.0', message: 'must be one of "0", "1", "2"; found "3"' }],
    });
  });

  it('reads the short forms: license, one input, options as a list of fields, classes as a count', () => {
    const mc = taskFromObject(
      {
        schema: 'rumedbench.task/1',
        name: 'Exam4',
        description: 'd',
        license: 'CC BY 4.0',
        id: 'idx',
        inputs: 'question',
        gold: 'answer',
        type: 'multiple_choice',
        options: ['1', '2', '3', '4'],
        metrics: ['accuracy'],
        splits: ['test'],
      },
      '/x/e.json',
    );
    expect(mc).toMatchObject({
      inputFields: ['question'],
      labels: ['1', '2', '3', '4'],
      choices: { optionFields: { '1': '1', '2': '2', '3': '3', '4': '4' } },
    });
    const ml = compileTask(
      parseTaskFile(`${HEAD}type: multilabel\nclasses: 73\nmetrics: [macro_f1]\n`, 't.yaml'),
      't.yaml',
    );
    expect(ml.kind === 'multilabel' && ml.classes.length).toBe(73);
  });

  it('knows the shipped ECG2Pathology by name, read when first asked for', () => {
    expect(isTaskName('ECG2Pathology')).toBe(true);
    expect(getTask('ECG2Pathology')).toMatchObject({
      kind: 'multilabel',
      idField: 'record_name',
      goldField: 'labels',
      metrics: ['macro_f1'],
      optional: true,
    });
    const task = getTask('ECG2Pathology');
    expect(task.kind === 'multilabel' && [task.classes.length, task.classes[0], task.classes[72]]).toEqual([
      73,
      '0',
      '72',
    ]);
  });
});

describe('answers to defined tasks', () => {
  it('reads one label, refusing a reply that names several', () => {
    const labels = ['лёгкая', 'средняя', 'тяжёлая'];
    expect(parseLabel('Ответ: Средняя.', labels)).toMatchObject({ status: 'parsed', answer: 'средняя' });
    expect(parseLabel('Состояние тяжелая', labels)).toMatchObject({ status: 'parsed', answer: 'тяжёлая' });
    expect(parseLabel('Ответ: лёгкая или средняя', labels)).toEqual({
      status: 'unparsed',
      reason: 'the answer names several labels: лёгкая, средняя',
    });
    expect(parseLabel('Не знаю', labels).status).toBe('unparsed');
  });

  it('reads a list of labels; "нет" is the empty set only where asked', () => {
    const labels = ['кардио', 'невро', 'пульмо'];
    expect(parseLabelList('Ответ: Пульмо, кардио', { labels })).toMatchObject({
      status: 'parsed',
      answer: ['пульмо', 'кардио'],
    });
    expect(parseLabelList('Ответ: нет', { labels }, { none: true })).toEqual({
      status: 'parsed',
      answer: [],
      notes: [],
    });
    expect(parseLabelList('Ответ: нет', { labels }).status).toBe('unparsed');
    expect(parseLabelList('Ответ: кардио; гастро', { labels })).toEqual({
      status: 'parsed',
      answer: ['кардио'],
      notes: ['"гастро" is not a label of this task'],
    });
    expect(parseLabelList('Ответ: A01, B02, C03', { pattern: /^[A-Z]\d\d$/u }, { max: 2 })).toEqual({
      status: 'parsed',
      answer: ['A01', 'B02'],
      notes: ['1 label(s) beyond the first 2 dropped'],
    });
  });
});
