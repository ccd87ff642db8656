/**
 * The boards as data: ranked entries per board (cached briefly, so several processes on one database agree within
 * a second), one submission as its page shows it, and the paired comparison of two public entries (cached until a
 * board changes). Reads only: uploads, gold and the admin change the boards and call `invalidate`.
 */
import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from '../../log.js';
import type { ComparisonResult } from '../../scoring/compare.js';
import type { EvaluationResult } from '../../scoring/score.js';
import { isConnectionError } from '../../workers/db-wait.js';
import * as q from '../db/queries.js';
import type { BoardName, Database } from '../db/schema.js';
import { HttpError } from '../errors.js';
import { BOARD_SPLIT, BOARD_TASKS, HELD_TASKS, OVERALL_TASKS } from '../score-upload.js';
import type { Scorer } from '../scorer.js';
import type { UploadLimits } from '../upload.js';
import { type Entry, rank, toEntry, visible } from './entries.js';
import type { BoardRanking, RankCell, RankJob, StoredItemStats } from './ranking.js';

/** A board's ranking as last computed: for which state of the board, and whether that state is still current. */
export interface RankingState {
  ranking: BoardRanking | null;
  /** Whether the ranking is of the board as it stands (false: being recomputed after a change). */
  current: boolean;
  computed_at: string | null;
  /** Why the last recomputation failed, if it did (the previous ranking is kept). */
  error: string | null;
}

export class Boards {
  private readonly boardCache = new Map<BoardName, { at: number; entries: Entry[] }>();
  private readonly compareCache = new Map<string, Promise<ComparisonResult>>();
  /** Per board: the last ranking, the board state it was computed for, and the state wanted next. */
  private readonly rankings = new Map<
    BoardName,
    { signature: string; ranking: BoardRanking | null; at: string; error: string | null }
  >();
  private readonly wanted = new Map<BoardName, string>();
  private readonly computing = new Map<BoardName, Promise<void>>();
  /** Entries' per-item counts as last read, with the summary they go with (both boards: ids are unique). */
  private readonly statsCache = new Map<string, { summary: string; stats: StoredItemStats }>();
  private log: Logger | undefined;
  /** Pages are cached this long, so that several processes on one database agree within it. */
  static readonly BOARD_TTL_MS = 1000;
  /** A failed ranking is tried again this long after it failed. */
  static RANKING_RETRY_MS = 30_000;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly scorer: Scorer,
    private readonly options: {
      bootstrap: number;
      seed: number;
      closedRelease: 'ladder' | 'exact';
      limits: UploadLimits;
    },
  ) {}

  /** Where a failed background recomputation is reported. */
  useLog(log: Logger): void {
    this.log = log;
  }

  /** Whether closed scores are shown as computed (the admin always sees them so). */
  private exact(admin = false): boolean {
    return admin || this.options.closedRelease === 'exact';
  }

  async board(board: BoardName, options: { includeHidden?: boolean } = {}): Promise<Entry[]> {
    if (options.includeHidden)
      return rank(
        (await q.listBoard(this.db, board, options)).map((r) => toEntry(r, undefined, { exact: true })),
      );
    const hit = this.boardCache.get(board);
    if (hit && Date.now() - hit.at < Boards.BOARD_TTL_MS) return hit.entries;
    const exact = this.exact();
    let rows: Awaited<ReturnType<typeof q.listBoard>>;
    try {
      rows = await q.listBoard(this.db, board);
    } catch (e) {
      // The database away for a moment (a restart): the board as last read, rather than no board.
      if (hit && isConnectionError(e)) return hit.entries;
      throw e;
    }
    const signature = boardSignature(rows);
    const last = this.rankings.get(board);
    // A failed recomputation (the database away a moment) is tried again a while later, changes or not.
    if (
      last?.signature !== signature ||
      (last.error !== null && Date.now() - Date.parse(last.at) >= Boards.RANKING_RETRY_MS)
    ) {
      if (last?.error) last.signature = '';
      this.scheduleRanking(board, signature);
    }
    const state = this.rankings.get(board);
    const entries = withRanks(
      rank(rows.map((r) => toEntry(r, undefined, { exact }))),
      state?.ranking ?? null,
    );
    // A repeat links only to an entry that is on the board (never a hidden or rejected one).
    const visible = new Set(entries.map((e) => e.id));
    for (const e of entries) if (e.duplicate_of && !visible.has(e.duplicate_of)) e.duplicate_of = null;
    this.boardCache.set(board, { at: Date.now(), entries });
    return entries;
  }

  /** The board's ranking as the page and the API show it (computed in the background; see `settled`). */
  ranking(board: BoardName): RankingState {
    const r = this.rankings.get(board);
    return {
      ranking: r?.ranking ?? null,
      current: r !== undefined && this.wanted.get(board) === r.signature,
      computed_at: r?.at ?? null,
      error: r?.error ?? null,
    };
  }

  /** Resolves when no ranking is being computed (tests, and a server that wants its boards ranked before it serves). */
  async settled(): Promise<void> {
    while (this.computing.size > 0) await Promise.all(this.computing.values());
  }

  /**
   * Recomputes a board's ranking off the page request: one at a time per board; a change during a recomputation
   * starts another when it ends. A failure is logged once and keeps the previous ranking.
   */
  private scheduleRanking(board: BoardName, signature: string): void {
    this.wanted.set(board, signature);
    if (this.computing.has(board)) return;
    const run = async () => {
      let took = 0;
      for (;;) {
        const target = this.wanted.get(board) as string;
        const previous = this.rankings.get(board);
        if (previous?.signature === target) return;
        // Back to back (a board changing under a stream of uploads): a pause as long as the last recomputation, so
        // that ranking takes at most half of the CPU it could, and uploads keep the rest.
        if (took > 0) {
          await new Promise((r) => setTimeout(r, took));
          took = 0;
          continue;
        }
        const started = Date.now();
        try {
          const ranking = await this.computeRanking(board);
          this.rankings.set(board, { signature: target, ranking, at: new Date().toISOString(), error: null });
        } catch (e) {
          const error = e instanceof Error ? e.message : String(e);
          this.log?.warn(`the ${board} board's ranking could not be computed: ${error}`);
          // `at` is when it failed: the next try is due RANKING_RETRY_MS later.
          this.rankings.set(board, {
            signature: target,
            ranking: previous?.ranking ?? null,
            at: new Date().toISOString(),
            error,
          });
        }
        // The next page shows the new ranking.
        this.boardCache.delete(board);
        took = Date.now() - started;
      }
    };
    this.computing.set(
      board,
      run().finally(() => this.computing.delete(board)),
    );
  }

  private async computeRanking(board: BoardName): Promise<BoardRanking> {
    const rows = (await q.rankableRows(this.db, board)).filter((r) => r.source !== 'campaign');
    // Each entry's counts are read and parsed once (they change only with its scores, which `summary` holds).
    const stale = rows.filter((r) => this.statsCache.get(r.id)?.summary !== r.summary);
    for (let i = 0; i < stale.length; i += 200) {
      const chunk = stale.slice(i, i + 200);
      const kept = new Map(
        (
          await q.itemStatsOf(
            this.db,
            chunk.map((r) => r.id),
          )
        ).map((r) => [r.id, r.item_stats]),
      );
      for (const r of chunk) {
        let text = kept.get(r.id) ?? null;
        // Entries scored before their counts were kept: scored again from their kept files, once.
        if (text === null) {
          const files = await q.getSubmissionFiles(this.db, r.id);
          const outcome = await this.scorer.score({
            files: files.map((f) => ({ name: f.name, data: new TextEncoder().encode(f.content) })),
            board,
            source: 'upload',
            bootstrap: 0,
            seed: this.options.seed,
            limits: this.options.limits,
          });
          if (!outcome.itemStats) continue;
          text = JSON.stringify(outcome.itemStats);
          await q.setItemStats(this.db, r.id, text);
        }
        this.statsCache.set(r.id, { summary: r.summary, stats: JSON.parse(text) as StoredItemStats });
      }
    }
    const present = new Set(rows.map((r) => r.id));
    for (const id of this.statsCache.keys()) if (!present.has(id)) this.statsCache.delete(id);
    // Under the Ladder an upload's place is not computed at all: a rank, interval or group is a function of its
    // exact scores and tells what the release withholds (two entries with one release ordered by one item; issue
    // #42). Uploads are ordered by their releases; entries shown as scored (run by the platform) are ranked among
    // themselves as on any board.
    // (On the public board the Ladder releases only hidden-gold tasks' scores, which are left out of its ranking.)
    const ladder = board === 'closed' && this.options.closedRelease === 'ladder';
    const entries: RankJob['entries'] = [];
    for (const r of rows) {
      const cached = this.statsCache.get(r.id);
      if (!cached || (ladder && r.ladder_key !== null)) continue;
      entries.push({ id: r.id, stats: cached.stats, inTasks: true, inOverall: true });
    }
    // Under the Ladder a task on hidden gold of the public board (ECG2Pathology) is ranked on nothing: its exact
    // scores would order the entries. The public overall is the five public tasks', on public gold.
    const held = HELD_TASKS.public;
    const tasks =
      board === 'public' && this.options.closedRelease === 'ladder'
        ? BOARD_TASKS.public.filter((t) => !held.includes(t))
        : BOARD_TASKS[board];
    return this.scorer.rank({
      board,
      tasks,
      overall: OVERALL_TASKS[board],
      split: BOARD_SPLIT[board],
      resamples: Math.max(this.options.bootstrap, 0),
      seed: this.options.seed,
      alpha: 0.05,
      entries,
    });
  }

  /** A submission as its page shows it; hidden and rejected ones only to the admin. */
  async entry(id: string, options: { admin?: boolean } = {}): Promise<Entry> {
    const row = await q.getSubmission(this.db, id);
    if (!row || (!options.admin && !visible(row))) {
      throw new HttpError(404, 'NOT_FOUND', `no submission ${id}`);
    }
    const entry = toEntry(row, JSON.parse(row.result) as EvaluationResult, {
      exact: this.exact(options.admin),
    });
    if (!options.admin && entry.duplicate_of) {
      const first = await q.getSubmission(this.db, entry.duplicate_of);
      if (!first || !visible(first)) entry.duplicate_of = null;
    }
    return entry;
  }

  /** The paired comparison of two scored public-board submissions (closed tests show aggregates only). */
  async compare(
    aId: string,
    bId: string,
  ): Promise<{ a: Entry; b: Entry; comparison: ComparisonResult | null }> {
    const [a, b] = [await this.entry(aId), await this.entry(bId)];
    if (a.board !== b.board)
      throw new HttpError(400, 'DIFFERENT_BOARDS', 'the two submissions are on different boards');
    if (a.board === 'closed') return { a, b, comparison: null };
    const files = async (e: Entry) => ({
      source: e.model,
      files: await q.getSubmissionFiles(this.db, e.id),
    });
    // Cached until the boards change: a comparison costs a bootstrap, and anybody may ask for one.
    const key = `${a.id}:${b.id}`;
    let comparison = this.compareCache.get(key);
    if (!comparison) {
      comparison = (async () =>
        this.scorer.compare({
          board: a.board,
          a: await files(a),
          b: await files(b),
          bootstrap: this.options.bootstrap,
          seed: this.options.seed,
        }))();
      comparison.catch(() => this.compareCache.delete(key));
      if (this.compareCache.size >= 256)
        this.compareCache.delete(this.compareCache.keys().next().value as string);
      this.compareCache.set(key, comparison);
    }
    return { a, b, comparison: await comparison };
  }

  /** Whether the comparison of a and b is cached (a cached one costs nothing to show again). */
  hasComparison(aId: string, bId: string): boolean {
    return this.compareCache.has(`${aId}:${bId}`);
  }

  /** Forgets cached boards and comparisons (after any change to a board). */
  invalidate(): void {
    this.boardCache.clear();
    this.compareCache.clear();
  }
}

/** What a board's ranking depends on: its visible entries and their (exact) scores. */
function boardSignature(
  rows: readonly { id: string; overall: number | null; released: number | null; summary: string }[],
): string {
  const h = createHash('sha256');
  for (const r of [...rows].sort((a, b) => (a.id < b.id ? -1 : 1)))
    h.update(`${r.id}\t${r.overall}\t${r.released}\t${r.summary}\n`);
  return h.digest('hex');
}

/** Entries with their places from a ranking (none where the ranking does not hold them). */
function withRanks(entries: Entry[], ranking: BoardRanking | null): Entry[] {
  if (!ranking) return entries;
  return entries.map((e) => {
    const tasks: Entry['tasks'] = {};
    for (const [name, cell] of Object.entries(e.tasks)) {
      const place: RankCell | undefined = ranking.tasks[name]?.entries[e.id];
      tasks[name] = place ? { ...cell, place } : cell;
    }
    const place = ranking.overall?.entries[e.id];
    return { ...e, tasks, ...(place ? { place } : {}) };
  });
}
