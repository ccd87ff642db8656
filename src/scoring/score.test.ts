/**
 * The library reads submissions as the CLI does (issue #45): a run folder is its predictions, a folder with no task
 * file is an error, and a result that scored nothing where a score was asked for is an error too; on fixture data
 * the test writes.
 */
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixtureDataDir, writeFixturePredictions } from '../../test/helpers/fixture-data.js';
import { compareSubmissions } from './compare.js';
import { ReferenceLoader } from './reference.js';
import { writeRunSummary } from './run-log.js';
import { evaluateSubmission } from './score.js';

const DATA = fixtureDataDir();
const tmp = () => mkdtempSync(join(tmpdir(), 'rumedbench-score-'));
const options = { dataDir: DATA, bootstrap: 0 };
const NO_FILES_EXPECTED = 'a predictions folder, a run folder, a submission.zip or <Task>.jsonl files';

/** A baseline run folder as `baseline` writes it: predictions/ and summary.json. */
async function runFolder(): Promise<string> {
  const run = join(tmp(), 'naive');
  const predictions = writeFixturePredictions(DATA, join(run, 'predictions'));
  writeRunSummary(run, {
    kind: 'baseline',
    runs: [],
    evaluation: await evaluateSubmission(predictions, options),
  });
  return run;
}

describe('evaluateSubmission, as the library gives it', () => {
  it('reads a run folder as its predictions/, as `eval` does', async () => {
    const run = await runFolder();
    const result = await evaluateSubmission(run, options);
    // The same value as the predictions folder's, every field (source included: what the scores were read from).
    expect(result).toEqual(await evaluateSubmission(join(run, 'predictions'), options));
    expect({
      tasks: Object.keys(result.tasks),
      overall: result.overall !== null,
      errors: result.errors,
    }).toEqual({
      tasks: ['RuMedTop3', 'RuMedSymptomRec', 'RuMedDaNet', 'RuMedNLI', 'RuMedNER'],
      overall: true,
      errors: [],
    });
  });

  it('answers an empty folder, and a folder above a run, with one NO_FILES error that says where to look', async () => {
    const empty = tmp();
    const none = await evaluateSubmission(empty, options);
    expect({ tasks: none.tasks, overall: none.overall, errors: none.errors }).toEqual({
      tasks: {},
      overall: null,
      errors: [
        {
          severity: 'error',
          code: 'NO_FILES',
          file: empty,
          message: `no <Task>.jsonl files to score in ${empty}`,
          expected: NO_FILES_EXPECTED,
        },
      ],
    });
    const run = await runFolder();
    const above = join(run, '..');
    expect((await evaluateSubmission(above, options)).errors).toEqual([
      {
        severity: 'error',
        code: 'NO_FILES',
        file: above,
        message: `no <Task>.jsonl files to score in ${above}; did you mean ${join(above, 'naive', 'predictions')}?`,
        expected: NO_FILES_EXPECTED,
      },
    ]);
  });

  it('makes "nothing scored" an error where a score was asked for, but validates a closed test without one', async () => {
    // ECG2Pathology's gold is its host's: without --gold its file is checked, and nothing is scored.
    const ecg = tmp();
    writeFileSync(join(ecg, 'ECG2Pathology.jsonl'), '{"record_name": "a", "labels": [1, 72]}\n');
    const result = await evaluateSubmission(ecg, options);
    expect({
      tasks: result.tasks,
      errors: result.errors,
      warnings: result.warnings.map((w) => w.code),
    }).toEqual({
      tasks: {},
      errors: [
        {
          severity: 'error',
          code: 'NOTHING_SCORED',
          file: ecg,
          message: 'no task was scored: no gold here for ECG2Pathology',
          expected:
            "each task's gold: in its data file, or as <Task>.jsonl in a folder given with --gold DIR",
        },
      ],
      warnings: ['NO_GOLD'],
    });
    // A closed test (private_test) has no public gold by definition: validating it is what was asked.
    const closed = tmp();
    const ids = readFileSync(join(DATA, 'RuMedDaNet', 'private_test_v1.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { pairID: string }).pairID);
    writeFileSync(
      join(closed, 'RuMedDaNet.jsonl'),
      ids.map((pairID) => JSON.stringify({ pairID, answer: 'да' })).join('\n'),
    );
    const check = await evaluateSubmission(closed, { ...options, split: 'private_test' });
    expect({ tasks: check.tasks, errors: check.errors, unscored: Object.keys(check.unscored) }).toEqual({
      tasks: {},
      errors: [],
      unscored: ['RuMedDaNet'],
    });
  });
});

describe('compareSubmissions, as the library gives it', () => {
  it('compares two run folders as their predictions, and calls an empty side and a comparison of nothing errors', async () => {
    const [a, b] = [await runFolder(), await runFolder()];
    const same = await compareSubmissions(a, b, options);
    expect({ tasks: Object.keys(same.tasks), errors: same.errors }).toEqual({
      tasks: ['RuMedTop3', 'RuMedSymptomRec', 'RuMedDaNet', 'RuMedNLI', 'RuMedNER'],
      errors: [],
    });
    expect(same.tasks.RuMedNLI?.score.delta).toBe(0);

    const empty = tmp();
    expect((await compareSubmissions(empty, b, options)).errors.map((e) => [e.code, e.file])).toEqual([
      ['NO_FILES', empty],
    ]);

    // Two submissions of different tasks: nothing to compare, said once.
    const nli = tmp();
    const danet = tmp();
    const preds = join(b, 'predictions');
    cpSync(join(preds, 'RuMedNLI.jsonl'), join(nli, 'RuMedNLI.jsonl'));
    cpSync(join(preds, 'RuMedDaNet.jsonl'), join(danet, 'RuMedDaNet.jsonl'));
    const none = await compareSubmissions(nli, danet, options);
    expect({ tasks: none.tasks, errors: none.errors }).toEqual({
      tasks: {},
      errors: [
        {
          severity: 'error',
          code: 'NOTHING_SCORED',
          file: `${nli} and ${danet}`,
          message: 'no task was compared: none is scored in both (A: RuMedNLI; B: RuMedDaNet)',
          expected: 'both submissions answering a task whose gold is here (its data file, or --gold DIR)',
        },
      ],
    });
  });
});

describe('the data folder looked in', () => {
  it('is named where the split is not found, except by a leaderboard, whose messages go to uploaders', async () => {
    const preds = join(tmp(), 'preds');
    const file = join(writeFixturePredictions(DATA, preds), 'RuMedNLI.jsonl');
    const nowhere = join(tmp(), 'nonexistent');
    const said = async (references?: ReferenceLoader) =>
      (
        await evaluateSubmission(file, {
          dataDir: nowhere,
          bootstrap: 0,
          ...(references ? { references } : {}),
        })
      ).errors[0]?.message;
    const advice =
      'run `rumedbench data download` or give --data DIR (or RUMEDBENCH_DATA); --file-gold scores on the gold the file carries instead';
    expect(await said()).toBe(
      `the test split of RuMedNLI is not in the data folder (no such folder: ${nowhere}): ${advice}`,
    );
    expect(await said(new ReferenceLoader(nowhere, { namePaths: false }))).toBe(
      `the test split of RuMedNLI is not in the data folder: ${advice}`,
    );
  });
});
