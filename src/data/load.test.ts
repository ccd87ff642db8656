import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DATA_DIR, NO_DATA_REASON } from '../../test/helpers/data.js';
import { DataInvalidError, DataNotFoundError } from '../errors.js';
import { getTask, TASKS } from '../tasks/registry.js';
import { dataInfo } from './info.js';
import { loadSplit } from './load.js';
import { resolveDataDir } from './paths.js';

function dataDirWith(task: string, split: string, lines: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'rumedbench-data-'));
  mkdirSync(join(dir, task));
  writeFileSync(join(dir, task, `${split}_v1.jsonl`), lines.join('\n'));
  return dir;
}

describe('loadSplit', () => {
  it('reports every bad record as file:line (id): problem', async () => {
    const dir = dataDirWith('RuMedNER', 'dev', [
      JSON.stringify({ idx: 'a', tokens: ['Виферон'], ner_tags: ['B-Drugname'] }),
      JSON.stringify({ idx: 'b', tokens: ['x', 'y'], ner_tags: ['O'] }),
      '{"idx": "c", ',
      JSON.stringify({ idx: 'a', tokens: ['z'], ner_tags: ['O'] }),
      JSON.stringify({ idx: 'd', tokens: ['z'], ner_tags: ['B-PER'] }),
      JSON.stringify({ idx: 'e', tokens: ['z'] }),
    ]);
    const error = await loadSplit(getTask('RuMedNER'), 'dev', { dataDir: dir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DataInvalidError);
    const file = join(dir, 'RuMedNER', 'dev_v1.jsonl');
    expect(
      (error as DataInvalidError).issues.map((i) => [i.file === file, i.line, i.id ?? null, i.message]),
    ).toEqual([
      [true, 2, 'b', 'field "ner_tags": must have one tag per token of "tokens" (1 tags, 2 tokens)'],
      [true, 3, null, expect.stringMatching(/^malformed JSON/)],
      [true, 4, 'a', 'duplicate id; first seen on line 1'],
      [true, 5, 'd', expect.stringMatching(/^field "ner_tags.0": must be one of O, B-ADR/)],
      [
        true,
        6,
        'e',
        'field "ner_tags" is missing (required in the dev split, unless its gold is held apart: `--gold DIR`)',
      ],
    ]);
  });

  it('reads a test split without its gold field where the gold is held apart (--gold), and only then', async () => {
    const lines = [
      JSON.stringify({ pairID: 'a', context: 'Текст.', question: 'Вопрос?' }),
      JSON.stringify({ pairID: 'b', context: 'Текст.', question: 'Вопрос?', answer: 'нет' }),
    ];
    const dir = dataDirWith('RuMedDaNet', 'test', lines);
    const task = getTask('RuMedDaNet');
    const apart = await loadSplit(task, 'test', { dataDir: dir, goldApart: true });
    expect(apart.map((r) => [r.id, r.line, r.gold ?? null])).toEqual([
      ['a', 1, null],
      ['b', 2, 'нет'],
    ]);
    const error = await loadSplit(task, 'test', { dataDir: dir }).catch((e: unknown) => e);
    expect((error as DataInvalidError).issues).toEqual([
      {
        file: join(dir, 'RuMedDaNet', 'test_v1.jsonl'),
        line: 1,
        id: 'a',
        message:
          'field "answer" is missing (required in the test split, unless its gold is held apart: `--gold DIR`)',
      },
    ]);
  });

  it('names a missing file and how to get it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rumedbench-empty-'));
    const error = await loadSplit(getTask('RuMedNLI'), 'train', { dataDir: dir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DataNotFoundError);
    expect((error as Error).message).toBe(
      `${join(dir, 'RuMedNLI', 'train_v1.jsonl')}: not found. Fetch the data with \`rumedbench data download\`, or point --data / RUMEDBENCH_DATA at a folder that has it.`,
    );
  });

  it('finds the data folder from the flag, then the environment, then the cache', () => {
    expect(resolveDataDir('/x', { RUMEDBENCH_DATA: '/y' })).toBe('/x');
    expect(resolveDataDir(undefined, { RUMEDBENCH_DATA: '/y' })).toBe('/y');
    expect(resolveDataDir(undefined, {})).toMatch(/rumedbench[/\\]data$/);
  });
});

describe.skipIf(!DATA_DIR)(`the public data (${DATA_DIR ? 'found' : NO_DATA_REASON})`, () => {
  const dataDir = DATA_DIR as string;

  it('loads every published split with the record counts of the README', async () => {
    const infos = await dataInfo(dataDir, { tasks: TASKS });
    expect(
      Object.fromEntries(
        infos.map((i) => [`${i.task}/${i.split}`, i.status === 'ok' ? i.records : i.status]),
      ),
    ).toEqual({
      'RuMedTop3/train': 4690,
      'RuMedTop3/dev': 848,
      'RuMedTop3/test': 822,
      'RuMedSymptomRec/train': 2470,
      'RuMedSymptomRec/dev': 415,
      'RuMedSymptomRec/test': 415,
      'RuMedDaNet/train': 1052,
      'RuMedDaNet/dev': 256,
      'RuMedDaNet/test': 256,
      'RuMedDaNet/private_test': 512,
      // Too large to mirror in ../shared: reported, not fatal.
      'RuMedNLI/train': 'missing',
      'RuMedNLI/dev': 1395,
      'RuMedNLI/test': 1422,
      'RuMedNLI/private_test': 1536,
      'RuMedNER/train': 3440,
      'RuMedNER/dev': 676,
      'RuMedNER/test': 693,
      'RuMedTest/private_test': 397,
    });
  });

  it('describes labels and lengths', async () => {
    const [info] = await dataInfo(dataDir, { tasks: [getTask('RuMedDaNet')], top: 2 });
    expect(info?.withGold).toBe(1052);
    expect(info?.distinctLabels).toBe(2);
    expect(info?.topLabels?.map((l) => l.label).sort()).toEqual(['да', 'нет']);
    expect(info?.length?.unit).toBe('chars');
    const [test] = await dataInfo(dataDir, { tasks: [getTask('RuMedTest')] });
    expect(test?.withGold).toBe(0);
  });
});
