import { afterAll, describe, expect, it } from 'vitest';
import { DATA_DIR, NO_DATA_REASON } from '../../test/helpers/data.js';
import { TESTED_TOP } from '../metrics/ranking.js';
import { createRng } from '../metrics/rng.js';
import { ReferenceLoader } from '../scoring/reference.js';
import { getTask } from '../tasks/registry.js';
import { encodeItemStats, type RankJob, type StoredTaskStats } from './boards/ranking.js';
import { Scorer } from './scorer.js';

const TASKS = ['RuMedDaNet', 'RuMedNLI'];

describe.skipIf(!DATA_DIR)(
  `a board's ranking kept between uploads${DATA_DIR ? '' : ` (${NO_DATA_REASON})`}`,
  () => {
    const scorers: Scorer[] = [];
    const scorer = () => {
      const s = new Scorer({ dataDir: DATA_DIR as string, threads: 2 });
      scorers.push(s);
      return s;
    };
    afterAll(async () => {
      await Promise.all(scorers.map((s) => s.close()));
    });

    /** Entries of varied skill on the public test sets of two tasks (one clustered), seeded. */
    async function entries(k: number): Promise<RankJob['entries']> {
      const refs = new ReferenceLoader(DATA_DIR as string);
      const records = await Promise.all(
        TASKS.map(async (t) => (await refs.load(getTask(t), 'test')).records ?? []),
      );
      const rng = createRng(44);
      const wrong: Record<string, string> = { да: 'нет', нет: 'да', neutral: 'entailment' };
      return Array.from({ length: k }, (_, e) => {
        const skill = 0.4 + 0.5 * rng.next();
        const tasks = TASKS.map((name, t) => ({
          task: getTask(name),
          file: `${name}.jsonl`,
          format: 'rumedbench' as const,
          issues: [],
          items: (records[t] ?? []).map((r) => {
            const gold = r.gold as string;
            return { id: r.id, gold, prediction: rng.next() < skill ? gold : (wrong[gold] ?? 'neutral') };
          }),
        }));
        return {
          id: `e${e}`,
          stats: encodeItemStats({ source: 'test', split: 'test', tasks, issues: [] }),
          inTasks: true,
          inOverall: true,
        };
      });
    }

    const jobOf = (list: RankJob['entries']): RankJob => ({
      board: 'public',
      tasks: TASKS,
      overall: TASKS,
      split: 'test',
      resamples: 200,
      seed: 0,
      alpha: 0.05,
      entries: list,
    });

    it(`an upload, a changed entry and a removed one, ranked from kept rows, give the full recomputation (over ${TESTED_TOP} entries)`, async () => {
      const all = await entries(TESTED_TOP + 12);
      const board = all.slice(0, TESTED_TOP + 10);
      const kept = scorer();
      const first = await kept.rank(jobOf(board));
      expect(first).toEqual(await scorer().rank(jobOf(board)));
      // e3 re-scored with e5's counts of RuMedDaNet; e7 gone; two uploads.
      const changed = board.flatMap((e) => {
        if (e.id === 'e7') return [];
        if (e.id !== 'e3') return [e];
        const other = board[5] as (typeof board)[number];
        return [{ ...e, stats: { ...e.stats, RuMedDaNet: other.stats.RuMedDaNet as StoredTaskStats } }];
      });
      const next = jobOf([...changed, ...all.slice(TESTED_TOP + 10)]);
      // Which jobs moved kept ranks (four entries changed) rather than ranking every replicate anew.
      const pool = (kept as unknown as { rankPool: { run: (job: unknown, o: { name: string }) => unknown } })
        .rankPool;
      const run = pool.run.bind(pool);
      const moved: string[] = [];
      pool.run = (job, o) => {
        if ((job as { kept?: unknown }).kept) moved.push(o.name);
        return run(job, o);
      };
      const incremental = await kept.rank(next);
      expect(moved).toEqual(['rankTask', 'rankTask', 'rankOverall']);
      expect(incremental).toEqual(await scorer().rank(next));
      // Every entry placed; letters only among the best TESTED_TOP of each task and of the overall.
      const cells = Object.values(incremental.overall?.entries ?? {});
      expect(cells.length).toBe(TESTED_TOP + 11);
      expect(cells.filter((c) => c.group !== '').length).toBe(TESTED_TOP);
      expect(incremental).not.toEqual(first);
    });
  },
);
