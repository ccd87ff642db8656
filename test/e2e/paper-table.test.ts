/** The scorer reproduces the paper's table from upstream's own prediction files, to two decimals. */
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PAPER_ROWS } from '../../src/report/paper.js';
import { evaluateSubmission } from '../../src/scoring/score.js';
import { DATA_DIR, NO_DATA_REASON, NO_REFERENCE_REASON, REFERENCE_PREDICTIONS } from '../helpers/data.js';

const ROWS = { naive: 'Naive', linear_models: 'Feature-based', bilstm: 'BiLSTM', human: 'Human' } as const;
const round2 = (x: number | null | undefined) => (x === null || x === undefined ? x : Number(x.toFixed(2)));

describe.skipIf(!DATA_DIR || !REFERENCE_PREDICTIONS)(
  `paper table (${!DATA_DIR ? NO_DATA_REASON : !REFERENCE_PREDICTIONS ? NO_REFERENCE_REASON : 'data found'})`,
  () => {
    for (const [folder, model] of Object.entries(ROWS)) {
      it(`${model} row from reference-predictions/${folder}`, async () => {
        // --file-gold: the naive and human RuMedDaNet files predate a re-release that changed 18 ids (see below).
        const result = await evaluateSubmission(join(REFERENCE_PREDICTIONS as string, folder), {
          dataDir: DATA_DIR as string,
          fileGold: true,
          bootstrap: 200,
        });
        const paper = PAPER_ROWS.find((r) => r.model === model);
        const ours = Object.fromEntries(
          Object.entries(result.tasks).map(([t, r]) => [
            t,
            Object.fromEntries(Object.entries(r.metrics).map(([m, v]) => [m, round2(v)])),
          ]),
        );
        expect(ours).toEqual(paper?.tasks);
        expect(round2(result.overall)).toBe(paper?.overall);
        expect(result.errors).toEqual([]);
        const [lo, hi] = result.overall_ci ?? [Number.NaN, Number.NaN];
        expect(lo).toBeLessThan(result.overall as number);
        expect(hi).toBeGreaterThan(result.overall as number);
      });
    }

    it('checked against the current test split, the Feature-based row scores identically', async () => {
      const result = await evaluateSubmission(join(REFERENCE_PREDICTIONS as string, 'linear_models'), {
        dataDir: DATA_DIR as string,
        bootstrap: 0,
      });
      expect(result.errors).toEqual([]);
      expect(round2(result.overall)).toBe(58.46);
    });

    it("with ECG2Pathology beside them, MedBench's six-task overall: the naive rows make upstream's 29.53", async () => {
      // The paper's naive files, and the naive ECG2Pathology row (class 37 for every record) on records whose gold has
      // class 37 in 18 of 25: macro F1 = 2·18 / (18 + 25) / 73 = 1.15, upstream's naive ECG2Pathology score.
      const dir = mkdtempSync(join(tmpdir(), 'rumedbench-six-'));
      mkdirSync(join(dir, 'preds'));
      mkdirSync(join(dir, 'gold'));
      const naive = join(REFERENCE_PREDICTIONS as string, 'naive');
      for (const f of readdirSync(naive)) copyFileSync(join(naive, f), join(dir, 'preds', f));
      const records = Array.from({ length: 25 }, (_, i) => `${String(i).padStart(5, '0')}_hr`);
      const lines = (labels: (i: number) => number[]) =>
        records.map((r, i) => `${JSON.stringify({ record_name: r, labels: labels(i) })}\n`).join('');
      writeFileSync(
        join(dir, 'gold', 'ECG2Pathology.jsonl'),
        lines((i) => (i < 18 ? [37] : [5])),
      );
      writeFileSync(
        join(dir, 'preds', 'ECG2Pathology.jsonl'),
        lines(() => [37]),
      );
      const result = await evaluateSubmission(join(dir, 'preds'), {
        dataDir: DATA_DIR as string,
        // The naive RuMedDaNet file predates the re-release (below); ECG2Pathology's gold is the host's.
        fileGold: true,
        goldDir: join(dir, 'gold'),
        bootstrap: 200,
      });
      expect(round2(result.tasks.ECG2Pathology?.score)).toBe(1.15);
      expect(round2(result.overall)).toBe(35.21);
      const six = result.overall_six;
      expect(six?.score).toBeCloseTo(
        ((result.overall as number) * 5 + (result.tasks.ECG2Pathology?.score ?? 0)) / 6,
        10,
      );
      expect(round2(six?.score)).toBe(29.53);
      const [lo, hi] = six?.ci ?? [Number.NaN, Number.NaN];
      expect(lo).toBeLessThan(six?.score as number);
      expect(hi).toBeGreaterThan(six?.score as number);
      // Without ECG2Pathology, no six-task overall is claimed.
      const five = await evaluateSubmission(naive, {
        dataDir: DATA_DIR as string,
        fileGold: true,
        bootstrap: 0,
      });
      expect(five.overall_six).toBeUndefined();
    });

    it('flags the 18 RuMedDaNet ids of the human file that the current test split no longer has', async () => {
      const result = await evaluateSubmission(join(REFERENCE_PREDICTIONS as string, 'human'), {
        dataDir: DATA_DIR as string,
        bootstrap: 0,
      });
      const codes = result.errors.map((e) => e.code);
      expect(codes.filter((c) => c === 'UNKNOWN_ID')).toHaveLength(18);
      expect(codes.filter((c) => c === 'MISSING_ITEM')).toHaveLength(18);
      expect(new Set(result.errors.map((e) => e.task))).toEqual(new Set(['RuMedDaNet']));
      expect(result.unscored).toEqual({
        RuMedDaNet: '36 error(s) in the file; the first: id is not in the test split of RuMedDaNet',
      });
      expect(result.overall).toBeNull();
      expect(result.warnings.map((w) => w.code)).toContain('DATA_VERSION_HINT');
    });
  },
);
