import { describe, expect, it } from 'vitest';
import { checkRecord } from './record.js';
import { getTask } from './registry.js';

const fields = (name: string) => getTask(name).recordFields;

describe('checkRecord', () => {
  it('keeps a good record as it is, extra fields included', () => {
    const danet = { pairID: 'p1', context: 'Текст.', question: 'Верно?', answer: 'да', extra: 1 };
    expect(checkRecord(fields('RuMedDaNet'), danet)).toEqual({ ok: true, data: danet });
    // RuMedTest's options may be empty strings; the gold is optional here (the loader requires it per split).
    const test = { idx: '1', question: 'Q', '1': '', '2': 'b', '3': 'c', '4': 'd' };
    expect(checkRecord(fields('RuMedTest'), test)).toEqual({ ok: true, data: test });
  });

  it('names every bad field of a record, with what it found', () => {
    expect(checkRecord(fields('RuMedNLI'), { pairID: '', ru_sentence1: 3, gold_label: 'maybe' })).toEqual({
      ok: false,
      issues: [
        { path: 'pairID', message: 'must be a non-empty string' },
        { path: 'ru_sentence1', message: 'must be a non-empty string; found a number' },
        { path: 'ru_sentence2', message: 'is missing' },
        {
          path: 'gold_label',
          message: 'must be one of "entailment", "contradiction", "neutral"; found "maybe"',
        },
      ],
    });
    expect(checkRecord(fields('RuMedTop3'), { idx: '1', symptoms: 'кашель', code: 'm54' })).toEqual({
      ok: false,
      issues: [{ path: 'code', message: 'must be a three-character ICD-10 code such as "M54"; found "m54"' }],
    });
    // A number is not a label of a built-in task: upstream's files hold strings.
    expect(
      checkRecord(fields('RuMedTest'), {
        idx: '1',
        question: 'Q',
        '1': 'a',
        '2': 'b',
        '3': 'c',
        '4': 'd',
        answer: 2,
      }),
    ).toEqual({ ok: false, issues: [{ path: 'answer', message: 'must be a string; found a number' }] });
  });

  it('checks tags per token: the first bad tag, then the count', () => {
    const ner = fields('RuMedNER');
    expect(checkRecord(ner, { idx: '1', tokens: [], ner_tags: [] })).toEqual({
      ok: false,
      issues: [{ path: 'tokens', message: 'must list at least one token' }],
    });
    expect(checkRecord(ner, { idx: '1', tokens: ['a', 'b'], ner_tags: ['O', 'B-PER', 'B-X'] })).toEqual({
      ok: false,
      issues: [
        {
          path: 'ner_tags.1',
          message: expect.stringMatching(/^must be one of O, B-ADR, I-ADR, .*; found "B-PER"$/),
        },
      ],
    });
    expect(checkRecord(ner, { idx: '1', tokens: ['a', 1] }).ok).toBe(false);
  });

  it('refuses what is not an object, and repeated labels in a set', () => {
    expect(checkRecord(fields('RuMedDaNet'), ['a'])).toEqual({
      ok: false,
      issues: [{ path: '', message: 'must be a JSON object; found a list' }],
    });
    const set = { id: { type: 'text' }, g: { type: 'label_set', oneOf: ['a', 'b'] } } as const;
    expect(checkRecord(set, { id: 'x', g: ['b', 'a'] })).toEqual({
      ok: true,
      data: { id: 'x', g: ['a', 'b'] },
    });
    expect(checkRecord(set, { id: 'x', g: ['a', 'a'] })).toEqual({
      ok: false,
      issues: [{ path: 'g', message: 'repeats a label' }],
    });
    expect(checkRecord(set, { id: 'x', g: 'a' })).toEqual({
      ok: false,
      issues: [{ path: 'g', message: 'must be a list of labels; found a string' }],
    });
  });
});
