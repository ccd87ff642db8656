/**
 * A task defined in a file on the boards (`serve --tasks-dir`): uploads of it are scored on the public board as
 * `rumedbench eval` scores them, its closed test waits for gold the admin imports (lists of classes, as a
 * multi-label task's gold is) and then is scored under the closed tests' rules: nothing per item stored or shown.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENGINES } from '../../../test/helpers/engines.js';
import { fixtureDataDir, writeFixturePredictions } from '../../../test/helpers/fixture-data.js';
import { type Body, useLeaderboardApp } from '../../../test/helpers/leaderboard-app.js';
import { evaluateSubmission } from '../../scoring/score.js';
import { loadUserTasks } from '../../tasks/user.js';
import { BOARD_TASKS } from '../score-upload.js';

const CLASSES = ['кардио', 'невро', 'пульмо'];
const jsonl = (rows: readonly object[]) => rows.map((r) => `${JSON.stringify(r)}\n`).join('');
/** Gold and answers as functions of the item, so that any score can be computed here. */
const goldOf = (i: number) => CLASSES.filter((_, j) => (i >> j) & 1);
const answerOf = (i: number) => CLASSES.filter((_, j) => ((i * 5 + 1) >> j) & 1);

const root = mkdtempSync(join(tmpdir(), 'rumedbench-board-task-'));
mkdirSync(join(root, 'data'));
writeFileSync(
  join(root, 'rubrics.yaml'),
  `schema: rumedbench.task/1
name: ClinicRubrics
description: Все подходящие рубрики для описания.
licence: CC BY 4.0
files:
  test: data/test.jsonl
  private_test: data/private_test.jsonl
id: id
inputs: [text]
gold: classes
type: multilabel
classes: [кардио, невро, пульмо]
metrics: [macro_f1, accuracy]
`,
);
const TEST = Array.from({ length: 24 }, (_, i) => ({
  id: `t${i}`,
  text: `описание ${i}`,
  classes: goldOf(i),
}));
const PRIVATE = Array.from({ length: 16 }, (_, i) => ({ id: `p${i}`, text: `закрытое ${i}` }));
writeFileSync(join(root, 'data', 'test.jsonl'), jsonl(TEST));
writeFileSync(join(root, 'data', 'private_test.jsonl'), jsonl(PRIVATE));
// As `serve --tasks-dir` does before the server starts (its scoring threads read the same file).
loadUserTasks([join(root, 'rubrics.yaml')]);

describe('a task defined in a file on the boards', () => {
  describe.each(ENGINES)('on %s', (engine) => {
    const t = useLeaderboardApp(engine, fixtureDataDir());

    it('is a column of both boards, scored on the public one as eval scores it', async () => {
      expect(BOARD_TASKS.public.at(-1)).toBe('ClinicRubrics');
      expect(BOARD_TASKS.closed.at(-1)).toBe('ClinicRubrics');
      const preds = mkdtempSync(join(tmpdir(), 'rumedbench-board-task-preds-'));
      writeFileSync(
        join(preds, 'ClinicRubrics.jsonl'),
        jsonl(TEST.map((r, i) => ({ id: r.id, prediction: answerOf(i) }))),
      );
      const { res, body } = await t.upload([
        {
          name: 'ClinicRubrics.jsonl',
          data: jsonl(TEST.map((r, i) => ({ id: r.id, prediction: answerOf(i) }))),
        },
      ]);
      expect(res.status, JSON.stringify(body)).toBe(201);
      const expected = await evaluateSubmission(preds, { dataDir: fixtureDataDir(), bootstrap: 0 });
      const entry = (await (await t.request(`/api/submissions/${body.id}`)).json()) as {
        board: string;
        tasks: Record<string, { metrics: Record<string, number> }>;
      };
      expect(entry.board).toBe('public');
      expect(entry.tasks.ClinicRubrics?.metrics).toEqual(expected.tasks.ClinicRubrics?.metrics);
      expect(expected.tasks.ClinicRubrics?.metrics.macro_f1).toBeGreaterThan(0);
      // On the board: a column of the page and of the API, ranked with the rest.
      await t.request('/api/boards/public');
      await t.lb.boards.settled();
      const board = (await (await t.request('/api/boards/public')).json()) as {
        ranking: { status: string };
        entries: { id: string; tasks: Record<string, { score: number; rank: number }> }[];
      };
      expect(board.ranking.status).toBe('current');
      const row = board.entries.find((e) => e.id === body.id);
      expect(row?.tasks.ClinicRubrics?.score).toBeCloseTo(expected.tasks.ClinicRubrics?.score as number, 10);
      expect(row?.tasks.ClinicRubrics?.rank).toBe(1);

      // The overall's ranks are the five public tasks': an entry without the defined task is ranked on them.
      const five = writeFixturePredictions(
        fixtureDataDir(),
        mkdtempSync(join(tmpdir(), 'rumedbench-five-')),
        2,
      );
      const paper = await t.upload(
        readdirSync(five).map((name) => ({ name, data: readFileSync(join(five, name), 'utf8') })),
      );
      expect(paper.res.status, JSON.stringify(paper.body)).toBe(201);
      await t.request('/api/boards/public');
      await t.lb.boards.settled();
      const again = (await (await t.request('/api/boards/public')).json()) as {
        entries: { id: string; rank: number | null }[];
      };
      expect(again.entries.find((e) => e.id === paper.body.id)?.rank).toBe(1);
      // Said on the page: the column is no part of the overall.
      expect(await (await t.request('/')).text()).toContain(
        'ClinicRubrics: defined by this leaderboard (not one of the paper’s tasks); shown beside the others, not part of the overall.',
      );
    });

    it('waits for the closed test gold, imports lists of classes, then scores and shows nothing per item', async () => {
      const answers = jsonl(PRIVATE.map((r, i) => ({ id: r.id, classes: answerOf(i) })));
      const { res, body } = await t.upload([{ name: 'ClinicRubrics.jsonl', data: answers }], {
        model: 'clinic model',
        kind: 'LLM',
      });
      // Accepted, pending its gold.
      expect(res.status, JSON.stringify(body)).toBe(202);
      expect((body as Body & { status: string }).status).toBe('pending');

      const gold = mkdtempSync(join(tmpdir(), 'rumedbench-board-task-gold-'));
      writeFileSync(join(gold, 'ClinicRubrics.jsonl'), '{"id": "p0", "classes": ["кардио", "гастро"]}\n');
      await expect(t.lb.gold.importGold(gold)).rejects.toThrow(
        `${join(gold, 'ClinicRubrics.jsonl')}:1 (id p0): answer must be a list of distinct classes from "кардио", "невро", "пульмо"`,
      );
      writeFileSync(
        join(gold, 'ClinicRubrics.jsonl'),
        jsonl(PRIVATE.map((r, i) => ({ id: r.id, classes: goldOf(i) }))),
      );
      expect((await t.lb.gold.importGold(gold)).tasks).toEqual({ ClinicRubrics: 16 });

      // The same score as eval on that gold, for the admin; no breakdown kept.
      const preds = mkdtempSync(join(tmpdir(), 'rumedbench-board-task-closed-'));
      writeFileSync(join(preds, 'ClinicRubrics.jsonl'), answers);
      const expected = await evaluateSubmission(preds, {
        dataDir: fixtureDataDir(),
        split: 'private_test',
        goldDir: gold,
        bootstrap: 0,
      });
      const exact = await t.lb.boards.entry(body.id as string, { admin: true });
      expect(exact.tasks.ClinicRubrics?.metrics).toEqual(expected.tasks.ClinicRubrics?.metrics);
      const { getSubmission } = await import('../db/shared.js');
      const row = await getSubmission(t.lb.db.db, body.id as string);
      expect(row?.result.includes('breakdown')).toBe(false);
      expect(row?.response.includes('p0')).toBe(false);
      const html = await (await t.request(`/submissions/${body.id}`)).text();
      expect(html).not.toContain('p0');
    });
  });
});
