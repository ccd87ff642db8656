import { describe, expect, it } from 'vitest';
import { parseJsonl } from '../data/jsonl.js';
import { taskFromObject } from '../tasks/definition.js';
import { getTask } from '../tasks/registry.js';
import type { TaskRecord } from '../tasks/types.js';
import { validateTaskFile } from './validate.js';

const rec = (
  id: string,
  gold: string | string[],
  line: number,
  raw: Record<string, unknown> = {},
): TaskRecord => ({
  id,
  gold,
  raw,
  line,
});
const lines = (...rows: (object | string)[]) => [
  ...parseJsonl(rows.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n')),
];
const brief = (issues: { code: string; line?: number; id?: string; severity: string }[]) =>
  issues.map((i) => [i.severity, i.code, i.line ?? null, i.id ?? null]);

describe('validateTaskFile: classification (RuMedNLI)', () => {
  const task = getTask('RuMedNLI');
  const reference = {
    split: 'test' as const,
    records: [
      rec('p1', 'neutral', 1),
      rec('p2', 'entailment', 2),
      rec('p3', 'contradiction', 3),
      rec('p4', 'neutral', 4),
    ],
  };

  it('accepts the MedBench platform format and takes gold from the data', () => {
    const v = validateTaskFile(
      task,
      'RuMedNLI.jsonl',
      lines(
        { pairID: 'p3', gold_label: 'contradiction' },
        { pairID: 'p1', gold_label: 'entailment' },
        { pairID: 'p2', gold_label: 'entailment' },
        { pairID: 'p4', gold_label: 'neutral' },
      ),
      reference,
    );
    expect(v.format).toBe('platform');
    expect(v.issues).toEqual([]);
    // Reference order, whatever the file order.
    expect(v.items?.map((i) => [i.id, i.gold, i.prediction])).toEqual([
      ['p1', 'neutral', 'entailment'],
      ['p2', 'entailment', 'entailment'],
      ['p3', 'contradiction', 'contradiction'],
      ['p4', 'neutral', 'neutral'],
    ]);
  });

  it('lists every problem with its line and id, and scores nothing', () => {
    const v = validateTaskFile(
      task,
      'RuMedNLI.jsonl',
      lines(
        '{"pairID": "p1", "gold_label": "neutral", "prediction": "neutral"',
        { pairID: 'p2', gold_label: 'entailment', prediction: 'yes' },
        { pairID: 'p2', gold_label: 'entailment', prediction: 'neutral' },
        { pairID: 'p9', gold_label: 'neutral', prediction: 'neutral' },
        { pairID: 'p3', gold_label: 'neutral', prediction: 'neutral' },
        { pairID: 'p4', gold_label: 'neutral' },
        { gold_label: 'neutral', prediction: 'neutral' },
        [1, 2],
        { pairID: 'p5', gold_label: 'neutral', prediction: 3 },
      ),
      reference,
    );
    expect(v.items).toBeUndefined();
    expect(brief(v.issues)).toEqual([
      ['error', 'MALFORMED_JSON', 1, null],
      ['error', 'UNKNOWN_LABEL', 2, 'p2'],
      ['error', 'DUPLICATE_ID', 3, 'p2'],
      ['error', 'UNKNOWN_ID', 4, 'p9'],
      ['error', 'GOLD_MISMATCH', 5, 'p3'],
      ['error', 'MIXED_FORMAT', 6, 'p4'],
      ['error', 'MISSING_ID', 7, null],
      ['error', 'NOT_AN_OBJECT', 8, null],
      ['error', 'UNKNOWN_ID', 9, 'p5'],
      // p1's only line is malformed JSON; p2 and p4 have lines (with errors), so they are not "missing" too.
      ['error', 'MISSING_ITEM', null, 'p1'],
      ['warning', 'DATA_VERSION_HINT', null, null],
    ]);
    const label = v.issues[1];
    expect(label?.expected).toBe('one of "entailment", "contradiction", "neutral"');
    expect(label?.found).toBe('"yes"');
    expect(v.issues[4]?.expected).toBe('"contradiction"');
  });

  it('takes null as "no answer": validated, kept, and scored as wrong', () => {
    const v = validateTaskFile(
      task,
      'RuMedNLI.jsonl',
      lines(
        { pairID: 'p1', gold_label: 'neutral', prediction: null },
        { pairID: 'p2', gold_label: 'entailment', prediction: 'entailment' },
        { pairID: 'p3', gold_label: 'contradiction', prediction: 'neutral' },
        { pairID: 'p4', gold_label: 'neutral', prediction: 'neutral' },
      ),
      reference,
    );
    expect(v.issues).toEqual([]);
    expect(v.items?.map((i) => i.prediction)).toEqual([null, 'entailment', 'neutral', 'neutral']);
  });

  it('rejects a wrongly typed or empty label', () => {
    const v = validateTaskFile(
      task,
      'f',
      lines({ pairID: 'p1', gold_label: 1 }, { pairID: 'p2', gold_label: ' ' }),
      { split: 'test', records: reference.records.slice(0, 2) },
    );
    expect(brief(v.issues)).toEqual([
      ['error', 'WRONG_TYPE', 1, 'p1'],
      ['error', 'EMPTY_PREDICTION', 2, 'p2'],
    ]);
  });
});

describe('validateTaskFile: ranking (RuMedTop3)', () => {
  const task = getTask('RuMedTop3');
  const reference = {
    split: 'test' as const,
    records: ['a', 'b', 'c', 'd', 'e', 'f'].map((id, i) => rec(id, 'M54', i + 1)),
    trainLabels: new Set(['M54', 'I11', 'G54']),
  };

  it('rejects lists that are too long, repeat a label, are empty, or hold malformed codes', () => {
    const v = validateTaskFile(
      task,
      'RuMedTop3.jsonl',
      lines(
        { idx: 'a', code: 'M54', prediction: ['M54', 'I11', 'G54', 'J06'] },
        { idx: 'b', code: 'M54', prediction: ['M54', 'M54'] },
        { idx: 'c', code: 'M54', prediction: [] },
        { idx: 'd', code: 'M54', prediction: ['M54.5'] },
        { idx: 'e', code: 'M54', prediction: 'M54' },
        { idx: 'f', code: 'M54', prediction: ['M54'] },
      ),
      reference,
    );
    expect(brief(v.issues)).toEqual([
      ['error', 'TOO_MANY_PREDICTIONS', 1, 'a'],
      ['error', 'DUPLICATE_PREDICTION', 2, 'b'],
      ['error', 'EMPTY_PREDICTION', 3, 'c'],
      ['error', 'UNKNOWN_LABEL', 4, 'd'],
      ['error', 'WRONG_TYPE', 5, 'e'],
    ]);
  });

  it('counts, but accepts, well-formed codes never seen in train', () => {
    const v = validateTaskFile(
      task,
      'RuMedTop3.jsonl',
      lines(...['a', 'b', 'c', 'd', 'e', 'f'].map((idx) => ({ idx, prediction: ['M54', 'Z99'] }))),
      reference,
    );
    expect(v.items).toHaveLength(6);
    expect(brief(v.issues)).toEqual([['warning', 'LABEL_OUTSIDE_TRAIN', null, null]]);
    expect(v.issues[0]?.message).toMatch(/^6 predicted label\(s\) never occur in train, e\.g\. "Z99"/);
  });
});

describe('validateTaskFile: tagging (RuMedNER)', () => {
  const task = getTask('RuMedNER');
  const reference = {
    split: 'test' as const,
    records: [
      rec('s1', ['B-Drugname', 'O'], 1, { tokens: ['Виферон', '.'] }),
      rec('s2', ['O', 'O', 'O'], 2, { tokens: ['не', 'помог', '.'] }),
    ],
  };

  it('rejects a tag list whose length differs from the tokens, and unknown tags', () => {
    const v = validateTaskFile(
      task,
      'RuMedNER.jsonl',
      lines({ idx: 's1', ner_tags: ['B-Drugname'] }, { idx: 's2', ner_tags: ['O', 'B-Drug', 'O'] }),
      reference,
    );
    expect(brief(v.issues)).toEqual([
      ['error', 'NER_LENGTH_MISMATCH', 1, 's1'],
      ['error', 'UNKNOWN_LABEL', 2, 's2'],
    ]);
    expect(v.issues[0]?.message).toBe('1 tags for 2 tokens');
  });

  it('scores a RuMedBench-format file on its own gold only with --file-gold; without the data it is an error', () => {
    const line = lines({ idx: 's1', ner_tags: ['B-Drugname', 'O'], prediction: ['B-Drugname', 'O'] });
    const asked = validateTaskFile(task, 'RuMedNER.jsonl', line, { split: 'test', fileGoldOnly: true });
    expect(asked.items).toEqual([{ id: 's1', gold: ['B-Drugname', 'O'], prediction: ['B-Drugname', 'O'] }]);
    expect(brief(asked.issues)).toEqual([['warning', 'NO_REFERENCE_DATA', null, null]]);
    const v = validateTaskFile(task, 'RuMedNER.jsonl', line, { split: 'test' });
    expect(v.items).toBeUndefined();
    expect(brief(v.issues)).toEqual([['error', 'NO_REFERENCE_DATA', null, null]]);
    expect(v.issues[0]?.message).toContain('rumedbench data download');
  });

  it('compares a RuMedBench-format file’s tag lists with the data’s tag by tag', () => {
    const v = validateTaskFile(
      task,
      'RuMedNER.jsonl',
      lines(
        { idx: 's1', ner_tags: ['B-Drugname', 'O'], prediction: ['O', 'O'] },
        { idx: 's2', ner_tags: ['O', 'O', 'B-Drugname'], prediction: ['O', 'O', 'O'] },
      ),
      reference,
    );
    expect(brief(v.issues)).toEqual([['error', 'GOLD_MISMATCH', 2, 's2']]);
  });

  it('needs the data for the platform format', () => {
    const v = validateTaskFile(task, 'RuMedNER.jsonl', lines({ idx: 's1', ner_tags: ['O', 'O'] }), {
      split: 'test',
    });
    expect(v.items).toBeUndefined();
    expect(brief(v.issues)).toEqual([['error', 'NO_REFERENCE_DATA', null, null]]);
  });
});

describe('validateTaskFile: closed test (RuMedTest)', () => {
  it('validates answers to a split without gold and leaves the task unscored', () => {
    const task = getTask('RuMedTest');
    const v = validateTaskFile(task, 'RuMedTest.jsonl', lines({ idx: 'q1', answer: '2' }), {
      split: 'private_test',
      records: [{ id: 'q1', gold: undefined, raw: {}, line: 1 }],
    });
    expect(v.items).toBeUndefined();
    expect(v.unscored).toMatch(/no gold labels in the private_test split of RuMedTest/);
    expect(brief(v.issues)).toEqual([['warning', 'NO_GOLD', null, null]]);
  });
});

describe('validateTaskFile: integer labels (issue #45)', () => {
  // A defined task's gold may be written as an integer (`"answer": 1` for the label "1"): its answers may too.
  const base = {
    schema: 'rumedbench.task/1',
    description: 'd',
    id: 'id',
    inputs: ['text'],
    gold: 'answer',
    splits: ['test'],
  };
  const triage = taskFromObject(
    { ...base, name: 'Triage', type: 'classification', labels: [0, 1, 2], metrics: ['accuracy'] },
    'triage.yaml',
  );
  const reference = {
    split: 'test' as const,
    records: [rec('a', '1', 1), rec('b', '2', 2), rec('c', '0', 3)],
  };

  it('reads an integer answer as the label its gold would be, in both formats, and refuses what is no label', () => {
    const v = validateTaskFile(
      triage,
      'Triage.jsonl',
      lines({ id: 'a', answer: 1, prediction: 1 }, { id: 'b', prediction: '2' }, { id: 'c', prediction: 2 }),
      reference,
    );
    expect([v.issues, v.items]).toEqual([
      [],
      [
        { id: 'a', gold: '1', prediction: '1' },
        { id: 'b', gold: '2', prediction: '2' },
        { id: 'c', gold: '0', prediction: '2' },
      ],
    ]);
    const bad = validateTaskFile(
      triage,
      'Triage.jsonl',
      lines({ id: 'a', answer: 3 }, { id: 'b', answer: 1.5 }, { id: 'c', answer: 0 }),
      reference,
    );
    expect(bad.issues.map((i) => [i.code, i.id, i.message, i.found])).toEqual([
      ['UNKNOWN_LABEL', 'a', 'label outside the label space', '3'],
      ['WRONG_TYPE', 'b', 'the answer must be a label (a string or an integer)', '1.5'],
    ]);
  });

  it('reads a ranking of integer labels; a built-in task whose gold is strings only refuses integers, as its data does', () => {
    const codes = taskFromObject(
      {
        ...base,
        name: 'Codes',
        type: 'ranking',
        k: 2,
        labels: [10, 20, 30],
        metrics: ['accuracy', 'hit_at_k'],
      },
      'codes.yaml',
    );
    const v = validateTaskFile(codes, 'Codes.jsonl', lines({ id: 'a', answer: [20, 10] }), {
      split: 'test',
      records: [rec('a', '10', 1)],
    });
    expect([v.issues, v.items]).toEqual([[], [{ id: 'a', gold: '10', prediction: ['20', '10'] }]]);
    const test = getTask('RuMedTest');
    const strict = validateTaskFile(test, 'RuMedTest.jsonl', lines({ idx: 'q1', answer: 2 }), {
      split: 'test',
      records: [rec('q1', '2', 1)],
    });
    expect(strict.issues.map((i) => [i.code, i.message])).toEqual([
      ['WRONG_TYPE', 'the answer must be a string'],
    ]);
  });
});
