/**
 * ECG2Pathology on a leaderboard (`serve --tasks-dir ECG2Pathology`): the shipped definition, whose records only the
 * host holds, becomes a column of both boards; uploads wait for the gold the admin imports (the gold's ids are the
 * split), then are scored as `eval --gold` scores them, under the closed tests' rules: nothing per item, scores
 * released by the Ladder. On the public board it makes MedBench's six-task overall beside the paper's five-task one.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { databaseBefore, ENGINES } from '../../../test/helpers/engines.js';
import { fixtureDataDir, writeFixturePredictions } from '../../../test/helpers/fixture-data.js';
import { type Body, useLeaderboardApp } from '../../../test/helpers/leaderboard-app.js';
import { evaluateSubmission } from '../../scoring/score.js';
import { loadUserTasks } from '../../tasks/user.js';
import { openDatabase } from '../db/connect.js';
import { loadHeldGold } from '../gold/queries.js';
import { BOARD_TASKS, HELD_TASKS, OVERALL_TASKS, SIX_TASK_OVERALL } from '../score-upload.js';

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
      // Its records are the host's: a column of both boards, on hidden gold on both.
      expect(BOARD_TASKS.closed.at(-1)).toBe('ECG2Pathology');
      expect(HELD_TASKS.public).toEqual(['ECG2Pathology']);
      const answers = jsonl(RECORDS.map((r, i) => ({ record_name: r, labels: answerOf(i) })));
      // Before any gold, the record names tell neither board: the uploader is asked to name it.
      const unnamed = await t.upload([{ name: 'ECG2Pathology.jsonl', data: answers }], {
        model: 'ecg model',
        kind: 'LLM',
      });
      expect(unnamed.res.status).toBe(422);
      expect(JSON.stringify(unnamed.body)).toContain('name the board (board: public or closed)');
      const { res, body } = await t.upload([{ name: 'ECG2Pathology.jsonl', data: answers }], {
        model: 'ecg model',
        kind: 'LLM',
        board: 'closed',
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
      const { getSubmission } = await import('../db/shared.js');
      const row = await getSubmission(t.lb.db.db, body.id as string);
      expect(row?.result.includes('breakdown')).toBe(false);
      expect(row?.response.includes('00001_hr')).toBe(false);
      expect(await (await t.request(`/submissions/${body.id}`)).text()).not.toContain('00001_hr');

      // All four closed tasks while three of them have no gold yet: ECG2Pathology is scored, but an upload climbs
      // its ladder only on every hidden task, so nothing on hidden gold is answered (no exact score slips out).
      const closedFile = (task: string, key: string, field: string, value: string) => ({
        name: `${task}.jsonl`,
        data: readFileSync(join(fixtureDataDir(), task, 'private_test_v1.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .map((l) =>
            JSON.stringify({ [key]: (JSON.parse(l) as Record<string, string>)[key], [field]: value }),
          )
          .join('\n'),
      });
      const four = await t.upload(
        [
          { name: 'ECG2Pathology.jsonl', data: answers },
          closedFile('RuMedDaNet', 'pairID', 'answer', 'да'),
          closedFile('RuMedNLI', 'pairID', 'gold_label', 'neutral'),
          closedFile('RuMedTest', 'idx', 'answer', '1'),
        ],
        { model: 'four', kind: 'LLM', board: 'closed' },
      );
      const fourBody = four.body as Body & { status: string; result: { tasks: object } };
      expect([
        four.res.status,
        fourBody.status,
        fourBody.overall,
        fourBody.ladder,
        fourBody.result.tasks,
      ]).toEqual([201, 'scored', null, undefined, {}]);

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
      // The closed board says whose task it is, and that no overall of its own takes it in.
      expect(await (await t.request('/board/closed')).text()).toContain(
        'ECG2Pathology: a MedBench task, added after the paper (not one of the paper’s tasks); shown beside the others, not part of the overall. Its score is its first metric.',
      );
    });
  });
});

/** The public test's records (the host hands them out; their gold it keeps): other names than the closed test's. */
const TEST_RECORDS = Array.from({ length: 40 }, (_, i) => `${String(i + 101).padStart(5, '0')}_lr`);

describe('ECG2Pathology on the public board: the six-task overall', () => {
  describe.each(ENGINES)('on %s', (engine) => {
    const data = fixtureDataDir();
    const t = useLeaderboardApp(engine, data);
    const five = writeFixturePredictions(data, mkdtempSync(join(tmpdir(), 'rumedbench-ecg-five-')), 2);
    const fiveFiles = () =>
      readdirSync(five).map((name) => ({ name, data: readFileSync(join(five, name), 'utf8') }));
    const ecg = (answer: (i: number) => number[]) => ({
      name: 'ECG2Pathology.jsonl',
      data: jsonl(TEST_RECORDS.map((r, i) => ({ record_name: r, labels: answer(i) }))),
    });

    it('scores on the test gold the admin imports, released by the Ladder, beside the paper’s overall', async () => {
      expect(BOARD_TASKS.public).toEqual([...OVERALL_TASKS.public, 'ECG2Pathology']);
      expect(SIX_TASK_OVERALL).toEqual([...OVERALL_TASKS.public, 'ECG2Pathology']);

      // Uploaded before the gold: the five are scored, ECG2Pathology waits (and the upload has its Ladder already).
      const first = await t.upload([...fiveFiles(), ecg(answerOf)], { model: 'six', kind: 'LLM' });
      expect(first.res.status, JSON.stringify(first.body)).toBe(201);
      expect((first.body as Body & { board: string }).board).toBe('public');
      expect(Object.keys((first.body.result as { unscored: object }).unscored)).toEqual(['ECG2Pathology']);
      expect(first.body.closed_quota).toBeDefined();

      // The test gold: only a task whose test records its host holds takes it, and every line is checked.
      const gold = mkdtempSync(join(tmpdir(), 'rumedbench-ecg-test-gold-'));
      writeFileSync(join(gold, 'RuMedDaNet.jsonl'), '{"pairID": "x", "answer": "да"}\n');
      await expect(t.lb.gold.importGold(gold, { split: 'test' })).rejects.toThrow(
        `${join(gold, 'RuMedDaNet.jsonl')}: not a task whose test gold the host holds (ECG2Pathology)`,
      );
      rmSync(join(gold, 'RuMedDaNet.jsonl'));
      writeFileSync(
        join(gold, 'ECG2Pathology.jsonl'),
        jsonl(TEST_RECORDS.map((r, i) => ({ record_name: r, labels: goldOf(i) }))),
      );
      const imported = await t.lb.gold.importGold(gold, { split: 'test' });
      expect(imported).toMatchObject({
        split: 'test',
        board: 'public',
        tasks: { ECG2Pathology: 40 },
        rescored: 1,
      });

      // As eval --gold scores the same six files: per task, the five-task overall and the six-task one.
      const preds = mkdtempSync(join(tmpdir(), 'rumedbench-ecg-six-'));
      for (const f of [...fiveFiles(), ecg(answerOf)]) writeFileSync(join(preds, f.name), f.data);
      const expected = await evaluateSubmission(preds, {
        split: 'test',
        dataDir: data,
        goldDir: gold,
        bootstrap: 0,
      });
      const exactEcg = expected.tasks.ECG2Pathology?.score as number;
      expect(exactEcg).toBeGreaterThan(0);
      const exact = await t.lb.boards.entry(first.body.id as string, { admin: true });
      expect(exact.tasks.ECG2Pathology?.metrics).toEqual(expected.tasks.ECG2Pathology?.metrics);
      expect(exact.overall).toBeCloseTo(expected.overall as number, 10);
      expect(exact.overall_six).toBeCloseTo(expected.overall_six?.score as number, 10);

      // What everybody sees: ECG2Pathology's score as the Ladder released it (rounded to one of 40 items), never its
      // metrics or anything per record; the six-task overall made with it; the five-task overall as computed.
      const released = Math.round(exactEcg / 2.5) * 2.5;
      const shown = (await (await t.request(`/api/submissions/${first.body.id}`)).json()) as Body & {
        tasks: Record<string, { score: number; metrics: object; released?: true }>;
      };
      expect(shown.tasks.ECG2Pathology).toMatchObject({ score: released, metrics: {}, released: true });
      expect(shown.overall).toBeCloseTo(expected.overall as number, 10);
      const fiveScores = OVERALL_TASKS.public.map((n) => expected.tasks[n]?.score as number);
      expect(shown.overall_six).toBeCloseTo((fiveScores.reduce((a, b) => a + b) + released) / 6, 10);
      const page = await (await t.request(`/submissions/${first.body.id}`)).text();
      expect(page).not.toContain('00101_lr');
      expect(page).toContain('Overall, 6 tasks');
      const { getSubmission } = await import('../db/shared.js');
      expect((await getSubmission(t.lb.db.db, first.body.id as string))?.result).not.toMatch(
        /"ECG2Pathology":\{[^}]*"breakdown"/,
      );

      // One answer flipped tells nothing: the Ladder shows the best so far again, and the answer has no exact score.
      const flipped = await t.upload([...fiveFiles(), ecg((i) => (i === 0 ? [1] : answerOf(i)))], {
        model: 'six, one flipped',
        kind: 'LLM',
      });
      expect(flipped.res.status, JSON.stringify(flipped.body)).toBe(201);
      expect(flipped.body.ladder).toEqual({
        mechanism: 'ladder',
        improved: false,
        tasks: ['ECG2Pathology'],
        released,
      });
      const result = flipped.body.result as { tasks: object; overall_six: { score: number } };
      expect(Object.keys(result.tasks)).not.toContain('ECG2Pathology');
      expect(result.overall_six.score).toBeCloseTo((fiveScores.reduce((a, b) => a + b) + released) / 6, 10);
      expect(JSON.stringify(flipped.body)).not.toContain('macro_f1');

      // The board: the paper's overall and the six-task one side by side; ECG2Pathology ranks nobody, the overall
      // ranks on the five public tasks; a paired comparison leaves it out.
      await t.request('/api/boards/public');
      await t.lb.boards.settled();
      const board = (await (await t.request('/api/boards/public')).json()) as {
        entries: (Body & { overall_six: number | null; rank: number | null })[];
      };
      expect(board.entries.map((e) => e.overall_six)).toEqual([shown.overall_six, shown.overall_six]);
      expect(board.entries.every((e) => e.rank !== null)).toBe(true);
      const ranking = t.lb.boards.ranking('public').ranking;
      expect(Object.keys(ranking?.tasks ?? {})).not.toContain('ECG2Pathology');
      const html = await (await t.request('/board/public')).text();
      expect(html).toContain('class="num overall-six"');
      expect(html).toContain('released by the Ladder');
      // The paper's rows carry MedBench's six-task overall where MedBench gives one (Naive 29.53, Human 58.13), and
      // ECG2Pathology is said to be MedBench's task, not this board's.
      const referenceRow = (model: string) =>
        html.match(
          new RegExp(`<tr class="reference">(?:(?!</tr>).)*?${model} <span(?:(?!</tr>).)*</tr>`, 's'),
        )?.[0];
      expect(
        ['Naive', 'Feature-based', 'Human'].map(
          (m) => referenceRow(m)?.match(/class="num overall-six">([^<]*)</)?.[1],
        ),
      ).toEqual(['29.53', '–', '58.13']);
      expect(html).toContain(
        'ECG2Pathology: a MedBench task, added after the paper (not one of the paper’s tasks); shown beside the others, not part of the overall, but of MedBench’s six-task overall beside it.',
      );
      expect(html).not.toContain('defined by this leaderboard');
      const csv = await (await t.request('/board/public.csv')).text();
      expect(csv.split('\r\n')[0]).toContain(',overall_six,');
      expect(csv).not.toContain('ECG2Pathology.macro_f1\r\n');
      // Released exactly (the final ranking): every score as computed.
      const exactApp = await t.variant({ closedRelease: 'exact' });
      const final = (await (await exactApp.request(`/api/submissions/${flipped.body.id}`)).json()) as Body & {
        tasks: Record<string, { metrics: Record<string, number>; released?: true }>;
      };
      expect(final.tasks.ECG2Pathology?.metrics.macro_f1).toBeGreaterThan(0);
      expect(final.tasks.ECG2Pathology?.released).toBeUndefined();
      const compared = await t.lb.boards.compare(first.body.id as string, flipped.body.id as string);
      expect(Object.keys(compared.comparison?.tasks ?? {})).toEqual(OVERALL_TASKS.public);
    });
  });
});

describe('the closed tests’ gold of a database from before held gold', () => {
  describe.each(ENGINES)('on %s', (engine) => {
    it('moves to the held gold of the private_test split when the server starts', async () => {
      // The previous release's schema: every migration before 0010_held_gold, and gold imported under it.
      const { target, db } = await databaseBefore(engine, '0010');
      await db
        .insertInto('private_gold')
        .values([
          { task: 'ECG2Pathology', item_id: '00001_hr', answer: '[37,5]' },
          { task: 'RuMedDaNet', item_id: 'd1', answer: '"да"' },
        ])
        .execute();
      await db.destroy();

      const opened = await openDatabase(target);
      try {
        const held = await loadHeldGold(opened.db);
        expect(held.test).toBeUndefined();
        expect(held.private_test?.ECG2Pathology?.get('00001_hr')).toEqual([37, 5]);
        expect(held.private_test?.RuMedDaNet?.get('d1')).toBe('да');
      } finally {
        await opened.close();
      }
    });
  });
});
