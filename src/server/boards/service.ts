/**
 * The boards as data: ranked entries per board (cached briefly, so several processes on one database agree within
 * a second), one submission as its page shows it, and the paired comparison of two public entries (cached until a
 * board changes). Reads only: uploads, gold and the admin change the boards and call `invalidate`.
 */
import type { Kysely } from 'kysely';
import type { ComparisonResult } from '../../scoring/compare.js';
import type { EvaluationResult } from '../../scoring/score.js';
import { isConnectionError } from '../../workers/db-wait.js';
import * as q from '../db/queries.js';
import type { BoardName, Database } from '../db/schema.js';
import { HttpError } from '../errors.js';
import type { Scorer } from '../scorer.js';
import { type Entry, rank, toEntry, visible } from './entries.js';

export class Boards {
  private readonly boardCache = new Map<BoardName, { at: number; entries: Entry[] }>();
  private readonly compareCache = new Map<string, Promise<ComparisonResult>>();
  /** Pages are cached this long, so that several processes on one database agree within it. */
  static readonly BOARD_TTL_MS = 1000;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly scorer: Scorer,
    private readonly options: { bootstrap: number; seed: number; closedRelease: 'ladder' | 'exact' },
  ) {}

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
    const entries = rank(rows.map((r) => toEntry(r, undefined, { exact })));
    // A repeat links only to an entry that is on the board (never a hidden or rejected one).
    const visible = new Set(entries.map((e) => e.id));
    for (const e of entries) if (e.duplicate_of && !visible.has(e.duplicate_of)) e.duplicate_of = null;
    this.boardCache.set(board, { at: Date.now(), entries });
    return entries;
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
