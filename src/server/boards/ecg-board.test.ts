/**
 * ECG2Pathology on a leaderboard (`serve --tasks-dir ECG2Pathology`): the shipped definition, whose records only the
 * host holds, becomes a column of the closed board; uploads wait for the gold the admin imports (the gold's ids are
 * the split), then are scored as `eval --gold` scores them, under the closed tests' rules.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENGINES } from '../../../test/helpers/engines.js';
import { fixtureDataDir } from '../../../test/helpers/fixture-data.js';
import { type Body, useLeaderboardApp } from '../../../test/helpers/leaderboard-app.js';
import { evaluateSubmission } from '../../scoring/score.js';
import { loadUserTasks } from '../../tasks/user.js';
import { BOARD_TASKS } from '../score-upload.js';

const jsonl = (rows: readonly object[]) => rows.map((r) => `${JSON.stringify(r)}\n`).join('');
const RECORDS = Array.from({ length: 40 }, (_, i) => `${String(i + 1).padStart(5, '0')}_hr`);
/** Gold and answers as functions of the record: class 37 in most, a few others. */
const goldOf = (i: number) => (i % 4 === 3 ? [5, 12] : i % 5 === 0 ? [37, 5] : [37]);
const answerOf = (i: number) => (i % 3 === 0 ? [37, 5] : i % 7 === 0 ? [] : [37]);

// As `serve --tasks-dir ECG2Pathology` does before the server starts.
loadUserTasks(['ECG2Pathology']);

describe('ECG2Pathology on the closed board', () => {
  describe.each(ENGINES)('on %s', (engine) => {
    const t = useLeaderboardApp(engine, fixtureDataDir());

    it('waits for the gold, whose ids are the split, then scores as eval --gold and shows nothing per item', async () => {
      // Its records are the host's: a closed column only (no public gold exists).
      expect(BOARD_TASKS.closed.at(-1)).toBe('ECG2Pathology');
      expect(BOARD_TASKS.public).not.toContain('ECG2Pathology');
      const answers = jsonl(RECORDS.map((r, i) => ({ record_name: r, labels: answerOf(i) })));
      const { res, body } = await t.upload([{ name: 'ECG2Pathology.jsonl', data: answers }], {
        model: 'ecg model',
        kind: 'LLM',
      });
      expect(res.status, JSON.stringify(body)).toBe(202);
      expect((body as Body & { board: string; status: string }).board).toBe('closed');

      const gold = mkdtempSync(join(tmpdir(), 'rumedbench-ecg-gold-'));
      const file = join(gold, 'ECG2Pathology.jsonl');
      writeFileSync(file, '{"record_name": "00001_hr", "labels": [37, 99]}\n');
      await expect(t.lb.gold.importGold(gold)).rejects.toThrow(`${file}:1 (id 00001_hr): answer must be`);
      writeFileSync(file, jsonl(RECORDS.map((r, i) => ({ record_name: r, labels: goldOf(i) }))));
      expect((await t.lb.gold.importGold(gold)).tasks).toEqual({ ECG2Pathology: 40 });

      const preds = mkdtempSync(join(tmpdir(), 'rumedbench-ecg-preds-'));
      writeFileSync(join(preds, 'ECG2Pathology.jsonl'), answers);
      const expected = await evaluateSubmission(preds, {
        split: 'private_test',
        goldDir: gold,
        bootstrap: 0,
      });
      expect(expected.tasks.ECG2Pathology?.metrics.macro_f1).toBeGreaterThan(0);
      const exact = await t.lb.boards.entry(body.id as string, { admin: true });
      expect(exact.status).toBe('scored');
      expect(exact.tasks.ECG2Pathology?.metrics).toEqual(expected.tasks.ECG2Pathology?.metrics);
      const { getSubmission } = await import('../db/queries.js');
      const row = await getSubmission(t.lb.db.db, body.id as string);
      expect(row?.result.includes('breakdown')).toBe(false);
      expect(row?.response.includes('00001_hr')).toBe(false);
      expect(await (await t.request(`/submissions/${body.id}`)).text()).not.toContain('00001_hr');

      // Every record answered, as on every closed test: one left out is refused (named: the host hands out the
      // records to be answered, so their names are no secret; their gold is).
      const short = await t.upload(
        [
          {
            name: 'ECG2Pathology.jsonl',
            data: jsonl(RECORDS.slice(1).map((r) => ({ record_name: r, labels: [37] }))),
          },
        ],
        { model: 'short', kind: 'LLM' },
      );
      expect(short.res.status).toBe(422);
      expect(JSON.stringify(short.body)).toContain('1 of 40 items have no answer');
      expect(JSON.stringify(short.body)).not.toMatch(/"labels"|\[37/);
    });
  });
});
