/**
 * The six built-in tasks are definition files (`tasks/<Task>.json`) in the schema users write theirs in. The
 * registry reads them without the schema library (start-up time), so these tests are where they are checked.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { splitPath } from '../data/paths.js';
import { TaskDefinitionError } from '../errors.js';
import { checkTask, compileTask, type TaskFile } from './definition.js';
import { loadTaskFile, parseTaskFile } from './definition-file.js';
import { checkRecord } from './record.js';
import { BUILTIN_NAMES, BUILTIN_TASKS, builtinFile, getTask, OVERALL_TASKS } from './registry.js';

const rawOf = (name: (typeof BUILTIN_NAMES)[number]) => JSON.parse(readFileSync(builtinFile(name), 'utf8'));

function problems(text: string, builtin = false): readonly string[] {
  try {
    parseTaskFile(text, 't.yaml', { builtin });
    return [];
  } catch (e) {
    if (e instanceof TaskDefinitionError) return e.problems;
    throw e;
  }
}

describe('the built-in tasks as definition files', () => {
  it('pass the schema, written out in full (what the registry reads unchecked is what the schema reads)', () => {
    for (const name of BUILTIN_NAMES) {
      const raw = rawOf(name);
      const seen: string[] = [];
      const checked = checkTask(raw, (path, reason) => seen.push(`${path.join('.')}: ${reason}`), {
        builtin: true,
      });
      expect([name, seen]).toEqual([name, []]);
      // No default filled in, no short form written out: the file is already in the checked form.
      expect(checked).toEqual(raw);
    }
  });

  it('are the paper’s tasks: names, order, overall, metrics and the score as the mean of its metrics', () => {
    expect(BUILTIN_TASKS.map((t) => t.name)).toEqual([...BUILTIN_NAMES]);
    expect(OVERALL_TASKS.map((t) => t.name)).toEqual([
      'RuMedTop3',
      'RuMedSymptomRec',
      'RuMedDaNet',
      'RuMedNLI',
      'RuMedNER',
    ]);
    expect(BUILTIN_TASKS.map((t) => [t.name, t.metrics, t.scoreOf, t.source])).toEqual([
      ['RuMedTop3', ['accuracy', 'hit_at_3'], 'mean', undefined],
      ['RuMedSymptomRec', ['accuracy', 'hit_at_3'], 'mean', undefined],
      ['RuMedDaNet', ['accuracy'], 'mean', undefined],
      ['RuMedNLI', ['accuracy'], 'mean', undefined],
      ['RuMedNER', ['accuracy', 'f1'], 'mean', undefined],
      ['RuMedTest', ['accuracy'], 'mean', undefined],
    ]);
  });

  it('keep their prompts byte for byte (the digest of every wording the tasks had as TypeScript modules)', () => {
    const ctx = { labels: ['сухой кашель', 'насморк'] };
    const text = BUILTIN_TASKS.map((t) => {
      const p = t.prompt;
      return [
        t.name,
        p.version,
        p.system,
        ...p.variants.flatMap((v) => [v.id, v.version, v.instruction(ctx), v.instruction({})]),
        p.loglik?.instruction ?? '',
        JSON.stringify(p.loglik?.candidates({}, ctx, {}) ?? null),
        JSON.stringify(p.loglik?.candidates({}, ctx, { labelWords: true }) ?? null),
      ].join('\u0000');
    }).join('\u0001');
    // Computed from the modules src/tasks/rumed-*.ts before they became these files; a change of wording needs a
    // new prompt version, and then a new digest here.
    expect(createHash('sha256').update(text).digest('hex')).toBe(PROMPTS_DIGEST);
  });

  it('read the data folder through {data}/ and keep upstream’s layout', () => {
    const t = getTask('RuMedNLI');
    expect(splitPath('/d', t, 'dev')).toBe(join('/d', 'RuMedNLI', 'dev_v1.jsonl'));
    expect(t.splits).toEqual(['train', 'dev', 'test', 'private_test']);
    expect(getTask('RuMedTest').splits).toEqual(['private_test']);
  });

  it('keep their record rules: labels are strings, RuMedTest’s options may be empty', () => {
    const danet = getTask('RuMedDaNet');
    expect(checkRecord(danet.recordFields, { pairID: 'a', context: 'c', question: 'q', answer: 1 })).toEqual({
      ok: false,
      issues: [{ path: 'answer', message: 'must be a string; found a number' }],
    });
    const top3 = getTask('RuMedTop3');
    expect(checkRecord(top3.recordFields, { idx: 'a', symptoms: 's', code: 'm54' })).toEqual({
      ok: false,
      issues: [{ path: 'code', message: 'must be a three-character ICD-10 code such as "M54"; found "m54"' }],
    });
    const test = getTask('RuMedTest');
    expect(
      checkRecord(test.recordFields, { idx: '1', question: 'q', 1: '', 2: 'b', 3: 'c', 4: 'd' }).ok,
    ).toBe(true);
  });

  it('are refused to a user file: a task of the overall is the paper’s', () => {
    const raw = { ...rawOf('RuMedDaNet'), name: 'MyDaNet' };
    expect(() => compileTask(raw as TaskFile, '/x/MyDaNet.json')).not.toThrow();
    const seen: string[] = [];
    checkTask(raw, (path, reason) => seen.push(`${path.join('.')}: ${reason}`));
    expect(seen).toEqual([
      "in_overall: RuMedOverall is the paper's mean over its five public tasks, which no other task joins: remove in_overall",
    ]);
  });
});

const HEAD =
  'schema: rumedbench.task/1\nname: T\ndescription: d\nlicence: l\nid: id\ninputs: [text]\ngold: g\nsplits: [test]\n';

describe('what the built-in tasks needed of the schema, for every task', () => {
  it('places the answer format where {format} stands, and the label inventory where {labels} stands', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rmb-def-'));
    const file = join(dir, 'T.yaml');
    writeFileSync(
      file,
      `${HEAD}type: ranking\nk: 2\nmetrics: [accuracy, hit_at_k]\nformat: "Ответ: А; Б."\nparser: symptoms\n` +
        'prompts:\n  - {id: p1, version: v1, instruction: "Выбери из списка {labels}:\\n{format}"}\n' +
        '  - {id: p2, version: v2, instruction: "Назови два."}\n' +
        'loglik: {instruction: "Выбери симптом."}\n',
    );
    const t = loadTaskFile(file);
    expect(t.prompt.instruction({ labels: ['кашель', 'жар'] })).toBe(
      'Выбери из списка кашель; жар:\nОтвет: А; Б.',
    );
    expect(t.prompt.variants[1]?.instruction({})).toBe('Назови два. Ответ: А; Б.');
    // The symptoms parser matches against the inventory, keeping k.
    expect(
      t.prompt.parse('Ответ: жар; кашель; насморк', {}, { labels: ['кашель', 'жар', 'насморк'] }),
    ).toEqual({
      status: 'parsed',
      answer: ['жар', 'кашель'],
      notes: [],
    });
    expect(t.prompt.loglik?.instruction).toBe('Выбери симптом.');

    // A closed label set is listed from the definition, whatever the run's inventory, in log-likelihood scoring too.
    writeFileSync(
      file,
      `${HEAD}type: classification\nlabels: [лёгкая, тяжёлая]\nmetrics: [accuracy]\n` +
        'prompts:\n  - {id: p1, version: v1, instruction: "Оцени тяжесть ({labels})."}\n',
    );
    const closed = loadTaskFile(file);
    expect(closed.prompt.instruction({ labels: ['x'] })).toBe(
      'Оцени тяжесть (лёгкая; тяжёлая). Последняя строка ответа: «Ответ: МЕТКА», где МЕТКА — одна из: лёгкая, тяжёлая.',
    );
    expect(closed.prompt.loglik?.instruction).toBe('Оцени тяжесть (лёгкая; тяжёлая).');
  });

  it('names a parser that does not fit, candidates of no label, and a first prompt listing {labels} without a loglik instruction', () => {
    expect(
      problems(`${HEAD}type: classification\nlabels: [a, b]\nmetrics: [accuracy]\nparser: yes_no\n`),
    ).toEqual([
      't.yaml:12:9: parser: the "yes_no" parser answers with the labels да, нет; the task\'s must be those',
    ]);
    expect(problems(`${HEAD}type: multilabel\nclasses: 3\nmetrics: [macro_f1]\nparser: icd10\n`)).toEqual([
      't.yaml:12:9: parser: "icd10" does not read a multilabel task; it takes label_list',
    ]);
    expect(
      problems(
        `${HEAD}type: classification\nlabels: [a, b]\nmetrics: [accuracy]\nloglik: {candidates: {a: "1", c: "2"}}\n`,
      ),
    ).toEqual(['t.yaml:12:34: loglik.candidates.c: "c" is not one of the labels']);
    expect(
      problems(
        `${HEAD}type: ranking\nmetrics: [accuracy]\nprompts: [{id: p1, version: v, instruction: "Из {labels}."}]\n`,
      ),
    ).toEqual([
      't.yaml:11:45: prompts.0.instruction: lists {labels}, which log-likelihood scoring cannot fill: give loglik.instruction, said before the candidates',
    ]);
  });

  it('scores by log-likelihood with named candidates, or with the labels themselves (--loglik-label-words)', () => {
    const t = compileTask(
      checkTask(
        {
          schema: 'rumedbench.task/1',
          name: 'T',
          description: 'd',
          licence: 'l',
          id: 'id',
          inputs: ['text'],
          gold: 'g',
          splits: ['test'],
          type: 'classification',
          labels: ['entailment', 'contradiction', 'neutral'],
          metrics: ['accuracy'],
          parser: 'nli',
          loglik: { candidates: { entailment: '1', contradiction: '2', neutral: '3' } },
        },
        () => {},
      ) as TaskFile,
      '/x/T.json',
    );
    expect(t.prompt.loglik?.candidates({}, {}, {}).map((c) => c.text)).toEqual([' 1', ' 2', ' 3']);
    expect(t.prompt.loglik?.candidates({}, {}, { labelWords: true }).map((c) => c.text)).toEqual([
      ' entailment',
      ' contradiction',
      ' neutral',
    ]);
    expect(t.prompt.parse('Ответ: 2', {}, {})).toMatchObject({ status: 'parsed', answer: 'contradiction' });
  });

  it('takes a field’s rule where the type’s default does not fit, and checks it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rmb-def-'));
    const file = join(dir, 'T.yaml');
    writeFileSync(
      file,
      `${HEAD}type: classification\nlabels: [a, b]\nmetrics: [accuracy]\n` +
        'fields:\n  g: {type: label, optional: true, one_of: [a, b]}\n  note: {type: string}\n',
    );
    const t = loadTaskFile(file);
    expect(checkRecord(t.recordFields, { id: '1', text: 't', g: 1, note: '' })).toEqual({
      ok: false,
      issues: [{ path: 'g', message: 'must be a string; found a number' }],
    });
    expect(
      problems(
        `${HEAD}type: classification\nlabels: [a, b]\nmetrics: [accuracy]\nfields:\n  g: {type: label}\n  x: {type: text, pattern: "["}\n`,
      ),
    ).toEqual([
      't.yaml:13:6: fields.g.optional: the gold field is optional here: each command says where gold is needed',
      't.yaml:14:6: fields.x: one_of, pattern, hint and numbers are rules of a label field',
      expect.stringMatching(/^t\.yaml:14:\d+: fields\.x\.pattern: not a regular expression: /),
    ]);
    expect(
      problems(
        `${HEAD}type: classification\nlabels: [a, b]\nmetrics: [accuracy]\nfields:\n  g: {type: label, optional: true, one_of: [a, c]}\n`,
      ),
    ).toEqual(["t.yaml:13:44: fields.g.one_of: the gold's labels must be among the task's: a, b"]);
    expect(
      problems(
        `${HEAD.replace('[text]', '[toks]')}type: tagging\ntokens: toks\nentity_types: [ADR]\nmetrics: [f1]\nfields:\n  g: {type: label, optional: true}\n  toks: {type: text}\n`,
      ),
    ).toEqual([
      "t.yaml:14:6: fields.g: a tagging task's gold is read by its type; it takes no rule here",
      't.yaml:15:16: fields.toks.type: the tokens field is a list of tokens',
    ]);
    expect(
      problems(
        `${HEAD}type: multiple_choice\noptions: {A: oa, B: ob}\nmetrics: [accuracy]\nparser: option\n`,
      ),
    ).toEqual([
      't.yaml:12:9: parser: the "option" parser reads option numbers 1-9; these keys are read by "label"',
    ]);
  });

  it('puts a {data}/ file under the data folder, as the built-in tasks do', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rmb-def-'));
    const file = join(dir, 'T.yaml');
    writeFileSync(
      file,
      `${HEAD.replace('splits: [test]\n', 'files: {test: "{data}/Mine/test.jsonl", dev: dev.jsonl}\n')}type: classification\nlabels: [a, b]\nmetrics: [accuracy]\n`,
    );
    const t = loadTaskFile(file);
    expect(splitPath('/data', t, 'test')).toBe(join('/data', 'Mine', 'test.jsonl'));
    expect(splitPath('/data', t, 'dev')).toBe(join(dir, 'dev.jsonl'));
    expect(t.splits).toEqual(['dev', 'test']);
  });

  it('accepts upstream’s metric names for tagging (accuracy: tokens, f1: entities)', () => {
    expect(
      problems(`${HEAD}type: tagging\ntokens: text\nentity_types: [ADR]\nmetrics: [accuracy, f1]\n`),
    ).toEqual([]);
  });
});

const PROMPTS_DIGEST = 'd8e363ac4bc00abeaca12d76ab659522504ba001ae626383baa0bde7b70391ea';
