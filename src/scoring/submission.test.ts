import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { strToU8, zipSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import { readSubmission, submissionFromEntries } from './submission.js';

const tmp = () => mkdtempSync(join(tmpdir(), 'rumedbench-sub-'));
const line = JSON.stringify({ pairID: 'p1', answer: 'да' });

function zip(entries: Record<string, string>): string {
  const path = join(tmp(), 'submission.zip');
  writeFileSync(path, zipSync(Object.fromEntries(Object.entries(entries).map(([k, v]) => [k, strToU8(v)]))));
  return path;
}

const summary = async (path: string) => {
  const s = await readSubmission(path);
  return {
    files: s.files.map((f) => [f.task, f.lines.length]),
    issues: s.issues.map((i) => [i.severity, i.code]),
  };
};

describe('readSubmission', () => {
  it('reads <Task>.jsonl files from a folder and reports other files', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'RuMedDaNet.jsonl'), `${line}\n\n`);
    writeFileSync(join(dir, 'RuMedFoo.jsonl'), line);
    writeFileSync(join(dir, 'notes.txt'), 'hello');
    mkdirSync(join(dir, 'sub'));
    expect(await summary(dir)).toEqual({
      files: [['RuMedDaNet', 1]],
      issues: [
        ['error', 'UNKNOWN_TASK_FILE'],
        ['warning', 'IGNORED_FILE'],
      ],
    });
  });

  it('accepts a zip with files at its root, reading the platform task ECG2Pathology as a task', async () => {
    expect(await summary(zip({ 'RuMedDaNet.jsonl': line, 'ECG2Pathology.jsonl': '{}' }))).toEqual({
      files: [
        ['ECG2Pathology', 1],
        ['RuMedDaNet', 1],
      ],
      issues: [],
    });
  });

  it('accepts a zip whose files sit inside one folder, ignoring archive metadata', async () => {
    expect(
      await summary(zip({ 'run1/RuMedDaNet.jsonl': line, '__MACOSX/run1/._RuMedDaNet.jsonl': 'x' })),
    ).toEqual({
      files: [['RuMedDaNet', 1]],
      issues: [['warning', 'IGNORED_FILE']],
    });
  });

  it('rejects deeper nesting and a mix of root files and folders', async () => {
    expect((await summary(zip({ 'a/b/RuMedDaNet.jsonl': line }))).issues).toEqual([
      ['error', 'BAD_ZIP_LAYOUT'],
    ]);
    expect((await summary(zip({ 'RuMedNLI.jsonl': line, 'x/RuMedDaNet.jsonl': line }))).issues).toEqual([
      ['error', 'BAD_ZIP_LAYOUT'],
    ]);
  });

  it('rejects a file that is not a zip, and a path that does not exist', async () => {
    const bad = join(tmp(), 'broken.zip');
    writeFileSync(bad, 'not a zip');
    expect((await summary(bad)).issues).toEqual([['error', 'BAD_ZIP']]);
    expect((await summary(join(tmp(), 'nope'))).issues).toEqual([['error', 'SUBMISSION_NOT_FOUND']]);
  });

  it("says where a defined task's file comes from: --tasks-dir, on the user's machine only", async () => {
    const dir = tmp();
    const file = join(dir, 'RuHospQA.jsonl');
    writeFileSync(file, line);
    const hint =
      '"RuHospQA.jsonl" names no RuMedBench task; a task defined in a file is known only with its definition: give --tasks-dir DIR (or RUMEDBENCH_TASKS)';
    const expected =
      '<Task>.jsonl of a known task: RuMedTop3, RuMedSymptomRec, RuMedDaNet, RuMedNLI, RuMedNER, RuMedTest';
    for (const path of [dir, file]) {
      expect((await readSubmission(path)).issues).toEqual([
        { severity: 'error', code: 'UNKNOWN_TASK_FILE', file, message: hint, expected },
      ]);
    }
    const zipped = zip({ 'RuHospQA.jsonl': line });
    expect((await readSubmission(zipped)).issues.map((i) => i.message)).toEqual([hint]);
    // A leaderboard's upload: its boards are fixed, so a flag of the command line is no advice.
    const upload = submissionFromEntries('(upload)', [{ name: 'RuHospQA.jsonl', text: () => line }]);
    expect(upload.issues.map((i) => i.message)).toEqual(['"RuHospQA.jsonl" names no RuMedBench task']);
  });
});
