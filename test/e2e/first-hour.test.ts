/**
 * A newcomer's first mistakes (issue #32), on fixture data the test writes: each ends with a non-zero exit and a
 * message that names the fix, or with the right score; never a quiet "nothing scored" and exit 0.
 */
import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rumedbench } from '../helpers/cli.js';
import { fixtureDataDir, writeFixturePredictions } from '../helpers/fixture-data.js';

const DATA = fixtureDataDir();

describe('a first hour of mistakes', () => {
  it('eval of a run folder scores its predictions; of a folder above it or of CSV files, says where to look', async () => {
    const runs = mkdtempSync(join(tmpdir(), 'rumedbench-first-'));
    const run = join(runs, 'naive');
    mkdirSync(run);
    cpSync(
      writeFixturePredictions(DATA, mkdtempSync(join(tmpdir(), 'rumedbench-pred-'))),
      join(run, 'predictions'),
      {
        recursive: true,
      },
    );
    writeFileSync(join(run, 'summary.json'), '{}');
    const ok = await rumedbench('eval', run, '--data', DATA, '--bootstrap', '0');
    expect([ok.code, ok.stdout]).toEqual([0, expect.stringContaining('RuMedDaNet')]);

    const parent = await rumedbench('eval', runs, '--data', DATA);
    expect(parent.code).toBe(1);
    expect(parent.stderr).toContain(
      `no <Task>.jsonl files to score in ${runs}; did you mean ${join(run, 'predictions')}?`,
    );
    expect(parent.stderr).not.toContain('MISSING_TASK');
    expect(parent.stderr).not.toContain('is not in the submission');

    const csv = mkdtempSync(join(tmpdir(), 'rumedbench-csv-'));
    writeFileSync(join(csv, 'RuMedDaNet.csv'), 'pairID,answer\n1,да\n');
    const c = await rumedbench('eval', csv, '--data', DATA);
    expect([c.code, c.stderr]).toEqual([1, expect.stringContaining('no <Task>.jsonl files to score')]);
  });

  it('names the task a near-miss file name meant', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rumedbench-typo-'));
    writeFileSync(join(dir, 'RuMedDanet.jsonl'), '{"pairID": "x", "answer": "да"}\n');
    const r = await rumedbench('eval', dir, '--data', DATA);
    expect([r.code, r.stderr]).toEqual([
      1,
      expect.stringContaining('"RuMedDanet.jsonl" names no RuMedBench task; did you mean RuMedDaNet?'),
    ]);
  });

  it('refuses to score without the data (a --data one level too high), naming the fix; --file-gold is asked for', async () => {
    const dir = writeFixturePredictions(DATA, mkdtempSync(join(tmpdir(), 'rumedbench-nodata-')));
    const r = await rumedbench('eval', dir, '--data', dirname(DATA), '--bootstrap', '0');
    expect(r.code).toBe(1);
    // The place looked in is named: the file it expected, or the folder that is not there.
    expect(r.stderr).toContain(
      `the test split of RuMedDaNet is not in the data folder (${join(dirname(DATA), 'RuMedDaNet', 'test_v1.jsonl')}: not found): run \`rumedbench data download\``,
    );
    const nowhere = join(dirname(DATA), 'nonexistent');
    const absent = await rumedbench('eval', dir, '--data', nowhere, '--bootstrap', '0');
    expect([absent.code, absent.stderr]).toEqual([
      1,
      expect.stringContaining(
        `the test split of RuMedDaNet is not in the data folder (no such folder: ${nowhere}): run`,
      ),
    ]);
    expect(r.stdout).not.toMatch(/Overall\s+\d/);
    const asked = await rumedbench('eval', dir, '--data', dirname(DATA), '--bootstrap', '0', '--file-gold');
    expect(asked.code).toBe(0);
  });

  it('recognises dev ids scored as test, and says --split dev', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rumedbench-dev-'));
    cpSync(join(DATA, 'RuMedDaNet', 'dev_v1.jsonl'), join(dir, 'RuMedDaNet.jsonl'));
    const r = await rumedbench('eval', dir, '--data', DATA, '--bootstrap', '0');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('these are RuMedDaNet dev ids, not test ones: score them with --split dev');
    expect(r.stderr).not.toContain('--file-gold');
    const dev = await rumedbench('eval', dir, '--data', DATA, '--bootstrap', '0', '--split', 'dev');
    expect([dev.code, dev.stdout]).toEqual([0, expect.stringMatching(/RuMedDaNet\s.*100\.00/)]);
  });

  it('answers a CSV file or a JSON array named .jsonl with one error saying what it looks like', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rumedbench-notjsonl-'));
    writeFileSync(
      join(dir, 'RuMedDaNet.jsonl'),
      ['pairID,answer', ...Array.from({ length: 500 }, (_, i) => `id${i},да`)].join('\n'),
    );
    writeFileSync(
      join(dir, 'RuMedNLI.jsonl'),
      JSON.stringify(
        Array.from({ length: 300 }, (_, i) => ({ pairID: `p${i}`, prediction: 'neutral' })),
        null,
        2,
      ),
    );
    const r = await rumedbench('eval', dir, '--data', DATA, '--bootstrap', '0');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('the file looks like CSV or TSV (a header line, then values), not JSONL');
    expect(r.stderr).toContain('the file looks like a JSON array (one value over many lines), not JSONL');
    expect(r.stderr).not.toContain('MALFORMED_JSON');
    expect(r.stderr.split('\n').filter((l) => l.startsWith('error:')).length).toBe(2);
    // Nothing scored: no "… is not in the submission" for every other task after the errors.
    expect(r.stderr).not.toContain('MISSING_TASK');
  });

  it('baseline naive with no data exits 1 and says to download it or pass --data', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'rumedbench-empty-'));
    const r = await rumedbench('baseline', 'naive', '--data', empty, '--out', join(empty, 'run'));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`no file of the asked tasks in ${empty}`);
    expect(r.stderr).toContain('run `rumedbench data download`, or give --data DIR');
  });

  it('data download with no network names why, marks nothing verified, and says what to do', async () => {
    const closed = createServer().listen(0, '127.0.0.1');
    await new Promise((r) => closed.once('listening', r));
    const port = (closed.address() as AddressInfo).port;
    closed.close();
    const dir = mkdtempSync(join(tmpdir(), 'rumedbench-offline-'));
    const r = await rumedbench(
      'data',
      'download',
      '--dir',
      dir,
      '--tasks',
      'RuMedDaNet',
      '--base-url',
      `http://127.0.0.1:${port}`,
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`request failed: connect ECONNREFUSED 127.0.0.1:${port}`);
    expect(r.stderr).toContain('no file could be fetched: this machine may be offline or behind a proxy');
    expect(r.stdout).not.toContain('sha256');
  }, 60_000);
});
