/**
 * The pool of scoring workers. Gold lives in the workers; when the gold the host holds changes, the pool is replaced
 * (the old one finishes what it has). From the TypeScript sources (tests) the worker is score-worker.ts itself
 * (src/worker-script.ts).
 */
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import type { TopLevelSpec } from 'vega-lite';
import type { ComparisonResult } from '../scoring/compare.js';
import type { HeldGold } from '../scoring/reference.js';
import type { EvaluationResult } from '../scoring/score.js';
import { userTasks } from '../tasks/registry.js';
import type { Split } from '../tasks/types.js';
import { workerScript } from '../worker-script.js';
import {
  assemble,
  type BoardRanking,
  type DrawRowsJob,
  KeptRankSets,
  overallReplicates,
  overallRows,
  type RankJob,
  type ReplicateRow,
  ReplicateRows,
  type RowStore,
  type rankBoardOverall,
  type rankBoardTask,
  taskJob,
} from './boards/ranking.js';
import type { ScoreJob, ScoreOutcome, SubsetJob } from './score-upload.js';
import type { CompareJob, WorkerSetup } from './score-worker.js';

/** Worker threads' nice values on Linux (score-worker.ts): rankings only on idle CPU, scoring below the HTTP thread. */
const RANK_NICE = 19;
const SCORE_NICE = 10;
/** Charts are drawn below uploads' scoring and above rankings: a page waits rather than an upload. */
const CHART_NICE = 15;
/**
 * Chart drawings waiting for the chart thread, at most: past it a page is answered 503 with Retry-After at once
 * (`ChartsBusyError`), so that a flood of uncached pages queues no unbounded work and holds no unbounded memory.
 */
export const CHART_QUEUE = 16;

/** The chart lane is full: the caller answers "busy, come back" instead of queueing more. */
export class ChartsBusyError extends Error {
  constructor() {
    super(`the chart drawing queue is full (${CHART_QUEUE} waiting)`);
    this.name = 'ChartsBusyError';
  }
}

/**
 * Seconds an upload's scoring took in this process (queue wait for a scoring thread included: what an uploader waits),
 * as a Prometheus histogram: cumulative counts at each bound, their sum and count.
 */
export class ScoringTimes {
  static readonly BOUNDS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30] as const;
  readonly counts: number[] = ScoringTimes.BOUNDS.map(() => 0);
  count = 0;
  sum = 0;
  observe(seconds: number): void {
    this.count++;
    this.sum += seconds;
    ScoringTimes.BOUNDS.forEach((b, i) => {
      if (seconds <= b) this.counts[i] = (this.counts[i] ?? 0) + 1;
    });
  }
}

export class Scorer {
  /** Every upload's scoring time, for `/metrics`. */
  readonly scoring = new ScoringTimes();
  private pool: Piscina;
  /**
   * Boards' rankings run in a pool of their own, at the lowest priority: a recomputation (seconds, for hundreds of
   * entries) takes the CPU uploads and pages leave idle instead of queueing them behind it. Its threads start when a
   * ranking needs them and end when idle.
   */
  private rankPool: Piscina;
  /**
   * Charts are drawn in a lane of their own: one thread, niced below uploads' scoring, with a bounded queue. Drawn in
   * the scoring threads, pages that each cost seconds of drawing queued uploads behind them (issue #57: upload p50
   * 172 ms idle, 2.2 s while 3 readers cycled uncached entry pages). Its thread starts with the first chart and ends
   * when idle; it loads no gold (charts need none).
   */
  private readonly chartPool: Piscina;
  private readonly threads: number;
  private readonly dataDir: string;
  /** The boards' replicate rows, kept between rankings: an upload draws its own rows only. */
  private readonly rows = new ReplicateRows();
  /** Each task's (and the overall's) replicate ranks, kept between rankings: an upload moves them. */
  private readonly ranks = new KeptRankSets();
  /** Per board, its ranking in progress (or the last one). */
  private readonly ranking = new Map<string, Promise<unknown>>();
  /** Per board, each entry's overall row with the task rows it is the mean of. */
  private readonly overallCache = new Map<
    string,
    Map<string, { parts: Float64Array[]; observed: number; boot: Float64Array }>
  >();

  constructor(options: { dataDir: string; threads?: number; heldGold?: HeldGold }) {
    this.dataDir = options.dataDir;
    this.threads = Math.max(1, options.threads ?? Math.min(4, availableParallelism()));
    this.pool = this.start(options.heldGold ?? {});
    this.rankPool = this.start(options.heldGold ?? {}, { lazy: true });
    this.chartPool = this.start({}, { lazy: true, charts: true });
  }

  private start(gold: HeldGold, options: { lazy?: boolean; charts?: boolean } = {}): Piscina {
    const workerData: WorkerSetup = {
      dataDir: this.dataDir,
      // The tasks `serve --tasks-dir` defined: each worker reads the same files (a thread has its own registry).
      taskFiles: userTasks().map((t) => t.source as string),
      nice: options.charts ? CHART_NICE : options.lazy ? RANK_NICE : SCORE_NICE,
      ...(options.charts ? { chartsOnly: true } : {}),
      heldGold: Object.entries(gold).flatMap(([split, tasks]) =>
        Object.entries(tasks ?? {}).map(
          ([task, m]) => [split as Split, task, [...m.entries()] as [string, string | string[]][]] as const,
        ),
      ),
    };
    return new Piscina({
      filename: workerScript('score-worker.js', import.meta.url).href,
      workerData,
      minThreads: options.lazy ? 0 : this.threads,
      maxThreads: options.charts ? 1 : this.threads,
      ...(options.charts ? { maxQueue: CHART_QUEUE } : {}),
      idleTimeout: options.lazy ? 60_000 : Number.POSITIVE_INFINITY,
    });
  }

  /** New held gold (closed tests, host-held test splits): later jobs see it. */
  async setGold(gold: HeldGold): Promise<void> {
    const [old, oldRank] = [this.pool, this.rankPool];
    this.pool = this.start(gold);
    this.rankPool = this.start(gold, { lazy: true });
    // New gold may be new items or clusters for a task: its rows are drawn again.
    this.rows.clear();
    this.ranks.clear();
    this.overallCache.clear();
    await Promise.all([old.close(), oldRank.close()]);
  }

  /** Scores an upload; its file buffers are moved to the worker, not copied (the caller must not reuse them). */
  async score(job: ScoreJob): Promise<ScoreOutcome> {
    const transferList = [...new Set(job.files.map((f) => f.data.buffer))].filter(
      (b): b is ArrayBuffer => b instanceof ArrayBuffer,
    );
    const t0 = performance.now();
    try {
      return (await this.pool.run(job, { name: 'default', transferList })) as ScoreOutcome;
    } finally {
      this.scoring.observe((performance.now() - t0) / 1000);
    }
  }

  subset(job: SubsetJob): Promise<{ result: EvaluationResult; overall: number | null }> {
    return this.pool.run(job, { name: 'subset' }) as Promise<{
      result: EvaluationResult;
      overall: number | null;
    }>;
  }

  compare(job: CompareJob): Promise<ComparisonResult> {
    return this.pool.run(job, { name: 'compare' }) as Promise<ComparisonResult>;
  }

  /**
   * A board's ranking: each task's missing replicate rows read from `store` or drawn (a cold start without a store:
   * all of them, in as many batches as threads), then each task ranked from its rows on the workers, then the
   * overall from the same rows. Rows drawn go to the store afterwards (`rowsSaved`).
   */
  rank(job: RankJob, store?: RowStore): Promise<BoardRanking> {
    // One at a time per board: a ranking moves the board's kept ranks in place.
    const run = (this.ranking.get(job.board) ?? Promise.resolve())
      .catch(() => {})
      .then(() => this.rankNow(job, store));
    this.ranking.set(job.board, run);
    return run;
  }

  private async rankNow(job: RankJob, store?: RowStore): Promise<BoardRanking> {
    const pool = this.rankPool;
    try {
      const rows = await Promise.all(
        job.tasks.map((task) =>
          this.rows.of(
            job,
            task,
            (entries) => {
              const draw: DrawRowsJob = {
                board: job.board,
                split: job.split,
                resamples: job.resamples,
                seed: job.seed,
                task,
                entries,
              };
              return pool.run(draw, { name: 'drawRows' }) as Promise<(ReplicateRow | null)[]>;
            },
            this.threads,
            store,
          ),
        ),
      );
      const parts = await Promise.all(
        job.tasks.map(async (t, i) => {
          const part = taskJob(job, t, rows[i] as Map<string, ReplicateRow>);
          const name = `${job.board}\0${t}`;
          const boot = part.entries.map((e) => e.row.boot);
          const kept = this.ranks.kept(
            name,
            part.entries.map((e) => e.id),
            boot,
          );
          const done = (await pool.run(kept ? { ...part, kept } : part, { name: 'rankTask' })) as Awaited<
            ReturnType<typeof rankBoardTask>
          >;
          if (done)
            this.ranks.keep(
              name,
              part.entries.map((e) => e.id),
              boot,
              done.ranks,
            );
          return done?.ranking ?? null;
        }),
      );
      let cache = this.overallCache.get(job.board);
      if (!cache) {
        cache = new Map();
        this.overallCache.set(job.board, cache);
      }
      const rowsOfOverall = overallRows(
        job.tasks.flatMap((t, i) =>
          job.overall.includes(t) ? [overallReplicates(job, rows[i] as Map<string, ReplicateRow>)] : [],
        ),
        cache,
      );
      let overall: BoardRanking['overall'] = null;
      if (rowsOfOverall) {
        const name = `${job.board}\0overall`;
        const kept = this.ranks.kept(name, rowsOfOverall.names, rowsOfOverall.boot);
        const done = (await pool.run(
          { rows: rowsOfOverall, alpha: job.alpha, ...(kept ? { kept } : {}) },
          { name: 'rankOverall' },
        )) as ReturnType<typeof rankBoardOverall>;
        this.ranks.keep(name, rowsOfOverall.names, rowsOfOverall.boot, done.ranks);
        overall = done.ranking;
      }
      return assemble(job, parts, overall);
    } catch (e) {
      // Kept ranks may have been moved part of the way: the next ranking ranks anew.
      this.ranks.clear();
      throw e;
    }
  }

  /** Resolves when the replicate rows drawn so far are in the store. */
  rowsSaved(): Promise<void> {
    return this.rows.saved();
  }

  /** Draws charts in the chart lane; a `ChartsBusyError` when its queue is full. */
  async render(charts: [string, TopLevelSpec, string][]): Promise<[string, string, string][]> {
    if (this.chartPool.queueSize >= CHART_QUEUE) throw new ChartsBusyError();
    return (await this.chartPool.run(charts, { name: 'render' })) as [string, string, string][];
  }

  async close(): Promise<void> {
    await Promise.all([this.pool.close(), this.rankPool.close(), this.chartPool.close()]);
  }
}
