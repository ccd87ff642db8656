/**
 * The public board's rank intervals and groups, in process on SQLite and PostgreSQL, on constructed systems from
 * the paper's predictions: the board and `rumedbench rank` agree on every rank interval and group, computed in
 * the background from the counts kept per entry, and the page says them in English and Russian.
 */
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DATA_DIR, NO_DATA_REASON } from '../../../test/helpers/data.js';
import { ENGINES } from '../../../test/helpers/engines.js';
import { attr, elements, parseHtml, textOf } from '../../../test/helpers/html.js';
import { files, ROUTES_READY, ref, useLeaderboardApp } from '../../../test/helpers/leaderboard-app.js';
import { groupLabels } from '../../metrics/ranking.js';
import { rankSubmissions } from '../../scoring/rank.js';
import { createApp } from '../app.js';
import { Leaderboard } from '../leaderboard.js';
import { Scorer } from '../scorer.js';
import type { DrawRowsJob } from './ranking.js';
import { Boards } from './service.js';

const byRow = (a: { submission_id: string; task: string }, b: { submission_id: string; task: string }) =>
  a.submission_id + a.task < b.submission_id + b.task ? -1 : 1;

/** A copy of a reference system with one task's lines rewritten. */
function variant(
  from: string,
  task: string,
  edit: (line: Record<string, unknown>, i: number) => void,
): string {
  const dir = mkdtempSync(join(tmpdir(), 'rumedbench-rank-board-'));
  cpSync(ref(from), dir, { recursive: true });
  const file = join(dir, `${task}.jsonl`);
  const lines = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  lines.forEach(edit);
  writeFileSync(file, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
  return dir;
}

const shares = (a: string, b: string) => groupLabels(a).some((l) => groupLabels(b).includes(l));

describe.skipIf(!ROUTES_READY)(`board ranking (${ROUTES_READY ? 'data found' : NO_DATA_REASON})`, () => {
  // linear and bilstm as published; "copy": bilstm with one right RuMedDaNet answer made wrong and one wrong one
  // made right; "worse": bilstm wrong on every RuMedDaNet item; "nli": linear, right on all of RuMedNLI.
  const systems: Record<string, string> = ROUTES_READY
    ? (() => {
        const danet = readFileSync(join(ref('bilstm'), 'RuMedDaNet.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as { answer: string; prediction: string });
        const right = danet.findIndex((l) => l.answer === l.prediction);
        const wrong = danet.findIndex((l) => l.answer !== l.prediction);
        const flip = (v: unknown) => (v === 'да' ? 'нет' : 'да');
        return {
          linear: ref('linear_models'),
          bilstm: ref('bilstm'),
          copy: variant('bilstm', 'RuMedDaNet', (l, i) => {
            if (i === right || i === wrong) l.prediction = flip(l.prediction);
          }),
          worse: variant('bilstm', 'RuMedDaNet', (l) => {
            l.prediction = flip(l.answer);
          }),
          nli: variant('linear_models', 'RuMedNLI', (l) => {
            l.prediction = l.gold_label;
          }),
        };
      })()
    : {};

  describe.each(ENGINES)('on %s', (engine) => {
    const t = useLeaderboardApp(engine);

    it('agrees with `rumedbench rank` on every interval and group, and says them on the page', async () => {
      const ids: Record<string, string> = {};
      for (const [name, dir] of Object.entries(systems)) {
        const { res, body } = await t.upload(files(dir), { model: name, kind: 'feature-based' });
        expect(res.status).toBe(201);
        ids[body.id as string] = name;
      }
      // The first read starts the ranking in the background; the page is not held up by it.
      const early = (await (await t.request('/api/boards/public')).json()) as { ranking: { status: string } };
      expect(['computing', 'current']).toContain(early.ranking.status);
      await t.lb.boards.settled();
      type Api = {
        ranking: { status: string; resamples: number; mde: Record<string, number | null> };
        entries: {
          id: string;
          rank: number;
          rank_ci: [number, number];
          group: string;
          tasks: Record<string, { rank: number; rank_ci: [number, number]; group: string }>;
        }[];
      };
      const api = (await (await t.request('/api/boards/public')).json()) as Api;
      expect(api.ranking.status).toBe('current');
      expect(api.ranking.resamples).toBe(1000);
      const cli = await rankSubmissions(Object.values(systems), {
        names: Object.keys(systems),
        dataDir: DATA_DIR as string,
        bootstrap: 1000,
        seed: 0,
      });
      const byName = Object.fromEntries(api.entries.map((e) => [ids[e.id] as string, e]));
      for (const [task, r] of Object.entries(cli.tasks)) {
        expect(api.ranking.mde[task]).toBeCloseTo(r.mde as number, 10);
        for (const s of r.systems)
          expect([task, s.name, byName[s.name]?.tasks[task]]).toEqual([
            task,
            s.name,
            { ...byName[s.name]?.tasks[task], rank: s.rank, rank_ci: s.rank_ci, group: s.group },
          ]);
      }
      for (const s of cli.overall?.systems ?? [])
        expect([s.name, byName[s.name]?.rank, byName[s.name]?.rank_ci, byName[s.name]?.group]).toEqual([
          s.name,
          s.rank,
          s.rank_ci,
          s.group,
        ]);
      // What the constructed systems are: the copy ties with its original, the worse one is apart from both, and
      // the system right on all of RuMedNLI stands alone at the top of it.
      const danet = (n: string) => byName[n]?.tasks.RuMedDaNet as { group: string; rank_ci: number[] };
      expect(shares(danet('copy').group, danet('bilstm').group)).toBe(true);
      expect(shares(danet('worse').group, danet('bilstm').group)).toBe(false);
      expect(byName.nli?.tasks.RuMedNLI).toMatchObject({ rank: 1, rank_ci: [1, 1] });
      for (const other of ['linear', 'bilstm', 'copy', 'worse'])
        expect(
          shares(byName.nli?.tasks.RuMedNLI?.group as string, byName[other]?.tasks.RuMedNLI?.group as string),
        ).toBe(false);
      for (const task of Object.keys(cli.tasks)) expect(api.ranking.mde[task]).toBeGreaterThan(0);
      // The page: each entry's interval and group under its overall, the detectable difference under each task.
      for (const [lang, word, detects] of [
        ['en', 'rank', 'detects ≥'],
        ['ru', 'место', 'различает ≥'],
      ] as const) {
        const doc = parseHtml(await (await t.request(`/?lang=${lang}`)).text());
        const rows = elements(doc, (e) => e.tagName === 'tr' && attr(e, 'class') === 'entry');
        expect(rows).toHaveLength(5);
        for (const row of rows) expect(textOf(row)).toMatch(new RegExp(`${word} \\d+(–\\d+)? · [a-z]+`));
        expect(textOf(doc)).toContain(detects);
      }
      // The CSV carries the overall's interval and group.
      const csv = (await (await t.request('/board/public.csv')).text()).split('\r\n');
      // (then what the run spent, empty for an upload that said nothing of it).
      expect(csv[0]).toMatch(/,overall,overall\.rank_ci,overall\.group,cost_usd,/);
      expect(csv[1]).toMatch(/,\d+(–\d+)?,[a-z]+,,,,,$/);
    });

    it('fills in the counts of entries scored before they were kept, from their files, and ranks them the same', async () => {
      const before = t.lb.boards.ranking('public').ranking;
      expect(before?.overall).not.toBeNull();
      await t.lb.db.db.updateTable('submissions').set({ item_stats: null }).execute();
      // A server started on the upgraded database: its boards have no ranking yet.
      const fresh = new Leaderboard(t.lb.db, t.lb.scorer, t.lb.options);
      await fresh.boards.board('public');
      await fresh.boards.settled();
      expect(fresh.boards.ranking('public').ranking).toEqual(before);
      const kept = await t.lb.db.db.selectFrom('submissions').select('item_stats').execute();
      expect(kept.every((r) => typeof r.item_stats === 'string')).toBe(true);
    });

    it('a restart reads the replicate rows kept in the database instead of drawing them, and ranks the same', async () => {
      await t.lb.boards.settled();
      const before = t.lb.boards.ranking('public').ranking;
      const stored = () =>
        t.lb.db.db.selectFrom('replicate_rows').select(['submission_id', 'task', 'key']).execute();
      const kept = await stored();
      expect(kept.length).toBeGreaterThan(0);
      // One row kept under another key (counts changed since): drawn again, and replaced.
      const stale = kept[0] as (typeof kept)[number];
      await t.lb.db.db
        .updateTable('replicate_rows')
        .set({ key: 'stale' })
        .where('submission_id', '=', stale.submission_id)
        .where('task', '=', stale.task)
        .execute();
      // A new process: a scorer with no rows in memory; what its ranking threads are asked is counted.
      const scorer = new Scorer({ dataDir: DATA_DIR as string, threads: 1 });
      const pool = (
        scorer as unknown as { rankPool: { run: (job: unknown, o: { name: string }) => unknown } }
      ).rankPool;
      const run = pool.run.bind(pool);
      const asked: string[] = [];
      const drawn: string[] = [];
      pool.run = (job, o) => {
        asked.push(o.name);
        if (o.name === 'drawRows')
          drawn.push(...(job as DrawRowsJob).entries.map((e) => `${(job as DrawRowsJob).task} ${e.id}`));
        return run(job, o);
      };
      try {
        const fresh = new Leaderboard(t.lb.db, scorer, t.lb.options);
        await fresh.boards.board('public');
        await fresh.boards.settled();
        expect(fresh.boards.ranking('public').ranking).toEqual(before);
        expect(drawn).toEqual([`${stale.task} ${stale.submission_id}`]);
        expect(asked).toContain('rankTask');
        expect((await stored()).sort(byRow)).toEqual(kept.sort(byRow));
      } finally {
        await scorer.close();
      }
    });

    it('says when a ranking cannot be computed, logs it once, keeps the last one, and tries again later', async () => {
      const failing = Object.create(t.lb.scorer) as typeof t.lb.scorer;
      failing.rank = () => Promise.reject(new Error('the ranking worker is gone'));
      let now = Date.now();
      const lb = new Leaderboard(t.lb.db, failing, { ...t.lb.options, clock: () => now });
      const warned: string[] = [];
      lb.boards.useLog({ debug() {}, info() {}, warn: (m) => warned.push(m), error() {} });
      await lb.boards.board('public');
      await lb.boards.settled();
      expect(lb.boards.ranking('public')).toMatchObject({
        ranking: null,
        error: 'the ranking worker is gone',
      });
      expect(warned).toEqual([
        "the public board's ranking could not be computed: the ranking worker is gone",
      ]);
      // The page numbers the entries by their overall, marked provisional (grey, with a title), the note beside.
      const page = await createApp({ lb, log: t.log }).request('/?lang=ru');
      const doc = parseHtml(await page.text());
      const tables = elements(doc, (e) => e.tagName === 'table' && attr(e, 'id') === 'board');
      expect(tables.map((e) => [attr(e, 'class'), attr(e, 'aria-describedby')])).toEqual([
        ['board provisional', 'ranking-status'],
      ]);
      const ranks = elements(doc, (e) => e.tagName === 'td' && attr(e, 'class') === 'num rank');
      expect(ranks.map((e) => [textOf(e), attr(e, 'title')])).toEqual(
        ranks.map((_, i) => [
          String(i + 1),
          'предварительно: порядок по общему баллу, пока места не вычислены',
        ]),
      );
      expect(elements(doc, (e) => attr(e, 'id') === 'ranking-status').map(textOf)).toEqual([
        expect.stringMatching(/^Места и группы для доски/),
      ]);
      // Read again past the board's cache but within the retry delay: not tried again, not logged again.
      now += Boards.BOARD_TTL_MS;
      await lb.boards.board('public');
      await lb.boards.settled();
      expect(warned).toHaveLength(1);
      // The worker back, the delay over: the next read ranks the board.
      failing.rank = t.lb.scorer.rank.bind(t.lb.scorer);
      now += Boards.RANKING_RETRY_MS;
      await lb.boards.board('public');
      await lb.boards.settled();
      expect(lb.boards.ranking('public')).toMatchObject({ current: true, error: null });
      expect(lb.boards.ranking('public').ranking?.overall).not.toBeNull();
    });
  });
});
