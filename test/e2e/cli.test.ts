/**
 * The `rumedbench` command on real files, in process; the smoke tests at the top run the built binary as a child
 * process, as a user runs it (its exit codes, stdout and stderr).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { VERSION } from '../../src/version.js';
import { rumedbench } from '../helpers/cli.js';
import { rumedbenchProcess } from '../helpers/cli-process.js';
import {
  DATA_DIR,
  NO_DATA_REASON,
  PLATFORM_SUBMISSIONS,
  REFERENCE_PREDICTIONS,
  REPO_ROOT,
} from '../helpers/data.js';
import { fixtureDataDir, writeFixturePredictions } from '../helpers/fixture-data.js';

describe('the built binary (smoke)', () => {
  it('prints its version and help, exits 2 on a bad command line, 0 on a good file and 1 on a broken one', async () => {
    const version = await rumedbenchProcess('--version');
    expect([version.code, version.stdout.trim()]).toEqual([0, expect.stringMatching(/^\d+\.\d+\.\d+/)]);
    const help = await rumedbenchProcess('eval', '--help');
    expect([help.code, help.stdout]).toEqual([0, expect.stringContaining('-q, --quiet')]);
    const bad = await rumedbenchProcess('eval', 'x', '--bootstrap', 'many');
    expect([bad.code, bad.stderr]).toEqual([
      2,
      expect.stringContaining('--bootstrap must be an integer ≥ 0'),
    ]);
    const data = fixtureDataDir();
    const predictions = writeFixturePredictions(data, mkdtempSync(join(tmpdir(), 'rumedbench-smoke-')));
    const good = await rumedbenchProcess('eval', predictions, '--data', data, '--bootstrap', '0', '--json');
    expect([good.code, JSON.parse(good.stdout).tasks.RuMedDaNet.metrics.accuracy]).toEqual([0, 50]);
    writeFileSync(join(predictions, 'RuMedNLI.jsonl'), '{"pairID": ');
    const broken = await rumedbenchProcess('eval', predictions, '--data', data, '--bootstrap', '0');
    expect([broken.code, broken.stderr]).toEqual([1, expect.stringContaining('MALFORMED_JSON')]);
  });
});

describe('npx', () => {
  it('passes --version on to rumedbench (npm 11 does; the README says so), which prints its own version', () => {
    const out = execFileSync('npx', ['--no-install', 'rumedbench', '--version'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
    });
    expect(out).toBe(`${VERSION}\n`);
  });
});

describe('usage', () => {
  it('exits 2 with a message on a bad flag value or an unknown command', async () => {
    const bad = await rumedbench('eval', 'x', '--bootstrap', 'many');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--bootstrap must be an integer ≥ 0, got "many"');
    expect((await rumedbench('evaluate')).code).toBe(2);
    expect((await rumedbench('eval', 'x', '--split', 'validation')).stderr).toContain(
      '--split must be one of train, dev, test, private_test',
    );
  });

  it('lists the six tasks, then the shipped ECG2Pathology', async () => {
    const { code, stdout } = await rumedbench('tasks');
    expect(code).toBe(0);
    const lines = stdout.trim().split('\n').slice(2);
    expect(lines.map((l) => l.split(/\s+/)[0])).toEqual([
      'RuMedTop3',
      'RuMedSymptomRec',
      'RuMedDaNet',
      'RuMedNLI',
      'RuMedNER',
      'RuMedTest',
      'ECG2Pathology',
    ]);
    expect(lines.at(-1)).toMatch(/multilabel\s+macro_f1\s+test, private_test\s+shipped \(/);
    // Each built-in task names its definition file, in the package's tasks/ folder.
    expect(lines[2]).toMatch(
      /classification\s+accuracy\s+train, dev, test, private_test\s+built in \(\S+\/tasks\/RuMedDaNet\.json\)/,
    );
    const json = JSON.parse((await rumedbench('tasks', '--json')).stdout) as { definition: string | null }[];
    expect(json.map((t) => t.definition?.replace(/^.*\/tasks\//, ''))).toEqual([
      'RuMedTop3.json',
      'RuMedSymptomRec.json',
      'RuMedDaNet.json',
      'RuMedNLI.json',
      'RuMedNER.json',
      'RuMedTest.json',
      'ECG2Pathology.json',
    ]);
  });
});

describe.skipIf(!DATA_DIR || !REFERENCE_PREDICTIONS || !PLATFORM_SUBMISSIONS)(
  `eval and compare (${DATA_DIR ? 'data found' : NO_DATA_REASON})`,
  () => {
    const refs = REFERENCE_PREDICTIONS as string;

    it('--json prints exactly one JSON object in the documented schema', async () => {
      const { code, stdout } = await rumedbench(
        'eval',
        join(refs, 'linear_models'),
        '--json',
        '--bootstrap',
        '100',
      );
      expect(code).toBe(0);
      const result = JSON.parse(stdout);
      expect(Object.keys(result).sort()).toEqual(
        [
          'bootstrap',
          'errors',
          'missing_tasks',
          'overall',
          'overall_ci',
          'rumedbench_version',
          'schema_version',
          'source',
          'split',
          'tasks',
          'unscored',
          'warnings',
        ].sort(),
      );
      expect(result.schema_version).toBe(1);
      expect(Object.keys(result.tasks)).toEqual([
        'RuMedTop3',
        'RuMedSymptomRec',
        'RuMedDaNet',
        'RuMedNLI',
        'RuMedNER',
      ]);
      expect(Object.keys(result.tasks.RuMedTop3.metrics)).toEqual(['accuracy', 'hit_at_3']);
      expect(Object.keys(result.tasks.RuMedNER.metrics)).toEqual(['accuracy', 'f1']);
      expect(Object.keys(result.tasks.RuMedNLI.metrics)).toEqual(['accuracy']);
      expect(result.tasks.RuMedNLI.n).toBe(1422);
      expect(result.tasks.RuMedNLI.ci.accuracy).toHaveLength(2);
      expect(result.tasks.RuMedNLI.breakdown.confusion.labels).toEqual([
        'entailment',
        'contradiction',
        'neutral',
      ]);
      expect(result.overall.toFixed(2)).toBe('58.46');
      expect(result.missing_tasks).toEqual([]);
    });

    it('prints the paper rows beside the result, and exits 1 listing errors for a broken submission', async () => {
      const ok = await rumedbench('eval', join(refs, 'bilstm'), '--reference', '--bootstrap', '50');
      expect(ok.stdout).toContain('Human (paper)');
      expect(ok.stdout).toMatch(
        /this submission\s+40\.88\/63\.50\s+20\.24\/31\.33\s+52\.34\s+60\.06\s+94\.74\/63\.26\s+53\.87/,
      );

      const dir = mkdtempSync(join(tmpdir(), 'rumedbench-cli-'));
      writeFileSync(
        join(dir, 'RuMedDaNet.jsonl'),
        `${JSON.stringify({ pairID: 'nope', answer: 'да' })}\n{"pairID": \n${JSON.stringify({ pairID: '53f9b303802507807bc96f95ba2a5230', answer: 'maybe' })}\n`,
      );
      const bad = await rumedbench('eval', dir, '--max-issues', '3');
      expect(bad.code).toBe(1);
      const lines = bad.stderr.trim().split('\n');
      expect(lines.slice(0, 4)).toEqual([
        `error: ${join(dir, 'RuMedDaNet.jsonl')}:1 (id nope): id is not in the test split of RuMedDaNet [UNKNOWN_ID]`,
        expect.stringMatching(/^error: .*RuMedDaNet\.jsonl:2: malformed JSON .* \[MALFORMED_JSON\]$/),
        `error: ${join(dir, 'RuMedDaNet.jsonl')}:3 (id 53f9b303802507807bc96f95ba2a5230): label outside the label space (expected one of "да", "нет"; found "maybe") [UNKNOWN_LABEL]`,
        'error: … and 255 more (--max-issues or --json lists them all)',
      ]);
    });

    it('validates MedBench platform submissions of the private tests, which have no public gold', async () => {
      const { code, stdout } = await rumedbench(
        'eval',
        join(PLATFORM_SUBMISSIONS as string, 'chatgpt'),
        '--split',
        'private_test',
        '--json',
      );
      expect(code).toBe(0);
      const result = JSON.parse(stdout);
      expect(result.tasks).toEqual({});
      expect(Object.keys(result.unscored)).toEqual(['RuMedDaNet', 'RuMedNLI', 'RuMedTest']);
      expect(result.errors).toEqual([]);
      expect(result.overall).toBeNull();
    });

    it("accepts the platform's sample zip, checking its ECG task and saying how to score it", async () => {
      const { code, stdout } = await rumedbench(
        'eval',
        join(PLATFORM_SUBMISSIONS as string, 'naive-sample_submission.zip'),
        '--split',
        'private_test',
        '--json',
      );
      const result = JSON.parse(stdout);
      expect({ code, errors: result.errors }).toEqual({ code: 0, errors: [] });
      expect(result.unscored.ECG2Pathology).toBe(
        'no gold for ECG2Pathology here (its host holds it; `eval --gold DIR` scores it on ECG2Pathology.jsonl in DIR)',
      );
    });

    it('compare: Feature-based against BiLSTM, with deltas, intervals and p-values', async () => {
      const { code, stdout } = await rumedbench(
        'compare',
        join(refs, 'linear_models'),
        join(refs, 'bilstm'),
        '--json',
        '--bootstrap',
        '300',
      );
      expect(code).toBe(0);
      const c = JSON.parse(stdout);
      expect(c.tasks.RuMedTop3.metrics.accuracy.delta.toFixed(2)).toBe('-8.88');
      expect(c.tasks.RuMedTop3.metrics.accuracy.p).toBeLessThan(0.01);
      expect(c.tasks.RuMedDaNet.metrics.accuracy.p).toBeGreaterThan(0.5);
      // 53.87 − 58.46 in the paper's rounded figures; -4.58 unrounded.
      expect(c.overall.delta.toFixed(2)).toBe('-4.58');
      const [lo, hi] = c.overall.ci;
      expect(lo).toBeLessThan(c.overall.delta);
      expect(hi).toBeGreaterThan(c.overall.delta);
    });

    it('data info names the missing RuMedNLI train file instead of failing', async () => {
      const { code, stdout, stderr } = await rumedbench('data', 'info');
      expect(code).toBe(0);
      expect(stdout).toMatch(/RuMedNLI\s+train\s+MISSING/);
      expect(stdout).toMatch(/RuMedTop3\s+test\s+822\s+yes\s+/);
      expect(stderr).toContain(
        `${join(DATA_DIR as string, 'RuMedNLI', 'train_v1.jsonl')}: missing: file not found`,
      );
    });
  },
);
