/**
 * The boards as data: ranked entries per board (cached, checked a second after each read, so that several processes
 * on one database agree within a second and a read), one submission as its page shows it, and the paired comparison
 * of two public entries (cached until a board changes). Reads only: uploads, gold and the admin change the boards
 * and call `added` or `invalidate`.
 * Invariant: a reader of a board that has been read once never waits on a read, a build or a write under way; it
 * gets the board as last built, and changes replace it when they are ready.
 */
import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from '../../log.js';
import type { ComparisonResult } from '../../scoring/compare.js';
import type { EvaluationResult } from '../../scoring/score.js';
import { isDatabaseAway } from '../../workers/db-wait.js';
import type { BoardName, Database, ListedRow } from '../db/schema.js';
import { HttpError } from '../errors.js';
import { BOARD_SPLIT, BOARD_TASKS, HELD_TASKS, OVERALL_TASKS } from '../score-upload.js';
import type { Scorer } from '../scorer.js';
import type { UploadLimits } from '../upload.js';
import { type Entry, rank, toEntry, visible } from './entries.js';
import * as q from './queries.js';
import {
  type BoardRanking,
  decodeReplicateRows,
  encodeReplicateRow,
  type RankCell,
  type RankJob,
  type RowStore,
  type StoredItemStats,
} from './ranking.js';

/** A board's ranking as last computed: for which state of the board, and whether that state is still current. */
export interface RankingState {
  ranking: BoardRanking | null;
  /** Whether the ranking is of the board as it stands (false: being recomputed after a change). */
  current: boolean;
  computed_at: string | null;
  /** Why the last recomputation failed, if it did (the previous ranking is kept). */
  error: string | null;
}

/**
 * Per database connection, the changes to the boards announced (`invalidate`, `added`) by every `Boards` on it: two
 * in one process on one connection (the admin's commands, tests) see each other's changes as another process's,
 * which SQLite's `dataVersion` does not count (it counts other connections' writes only).
 */
const announced = new WeakMap<Kysely<Database>, number>();

export class Boards {
  private readonly boardCache = new Map<BoardName, BoardCacheEntry>();
  /** Each row's entry as last made, while the row stays as it is, and its digest (its part of the board's signature). */
  private readonly rowCache = new Map<string, { row: ListedRow; entry: Entry; digest: Uint32Array }>();
  /** A whole read of a board under way, which concurrent readers share. */
  private readonly reading = new Map<BoardName, Promise<Entry[]>>();
  /** A board's update under way (`refresh`), and the one that starts after it. */
  private readonly refreshing = new Map<BoardName, Promise<void>>();
  private readonly queuedRefresh = new Map<BoardName, Promise<void>>();
  /** When the last update began, and how long the last build took (ms, `performance.now`): the next one waits. */
  private lastUpdateAt = 0;
  private lastBuildMs = 0;
  /** The board as last built, kept through an invalidation for when the database is away. */
  private readonly lastEntries = new Map<BoardName, Entry[]>();
  /** Uploads of this process in the last seconds, and when: a read begun before one was stored may lack it. */
  private readonly recentlyAdded = new Map<string, number>();
  /** Each kept entry with the places of the ranking last applied to it. */
  private readonly placed = new WeakMap<Entry, { ranking: BoardRanking; entry: Entry }>();
  /** Moves on each invalidation, so that a read begun before one is not taken for the board after it. */
  private generation = 0;
  /** How many of the changes `announced` on this connection were this instance's own. */
  private ownAnnounced = 0;
  private readonly compareCache = new Map<string, Promise<ComparisonResult>>();
  /** Per board: the last ranking, the board state it was computed for, and the state wanted next. */
  private readonly rankings = new Map<
    BoardName,
    { signature: string; ranking: BoardRanking | null; at: string; error: string | null }
  >();
  /** Per board, the state its ranking should be of: the board's signature and its rows as read. */
  private readonly wanted = new Map<BoardName, { signature: string; rows: readonly ListedRow[] }>();
  private readonly computing = new Map<BoardName, Promise<void>>();
  /** Entries' per-item counts as last read, with the summary they go with (both boards: ids are unique). */
  private readonly statsCache = new Map<string, { summary: string; stats: StoredItemStats }>();
  private log: Logger | undefined;
  /** What the caches take the time from (milliseconds, as `Date.now`): tests move it instead of waiting. */
  private readonly clock: () => number;
  /**
   * Boards are checked this long after they were read, so that several processes on one database agree within it
   * (and its read). On SQLite the check costs nothing when no other connection wrote meanwhile (`dataVersion`).
   */
  static readonly BOARD_TTL_MS = 1000;
  /** An update of a board waits this many times the last build's time after the last update began. */
  static readonly UPDATE_PAUSE = 8;
  /** A failed ranking is tried again this long after it failed. */
  static readonly RANKING_RETRY_MS = 30_000;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly scorer: Scorer,
    private readonly options: {
      bootstrap: number;
      seed: number;
      closedRelease: 'ladder' | 'exact';
      limits: UploadLimits;
      clock?: () => number;
    },
  ) {
    this.clock = options.clock ?? Date.now;
  }

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
    // The first read of a board waits for it; after that a reader gets the board as last built, at once, and what
    // has changed since (uploads of this process, a new ranking, another process's writes) replaces it when it is
    // ready: readers never wait on a read, a build or a write under way (under 8 uploading clients they did).
    if (!hit) return this.readAll(board);
    if (hit.added.size > 0 || hit.rerank || this.clock() - hit.at >= Boards.BOARD_TTL_MS)
      void this.refresh(board);
    return hit.entries;
  }

  /**
   * Brings a cached board up to date, in the background: one update at a time per board, and one more after it for
   * whatever changed meanwhile (every caller's change is in the update its promise is of). Never rejects: a failure
   * is logged, and the board stays as it was until the next change or check.
   */
  private refresh(board: BoardName): Promise<void> {
    const queued = this.queuedRefresh.get(board);
    if (queued) return queued;
    const running = this.refreshing.get(board);
    const next = (running ?? Promise.resolve()).then(async () => {
      // Updates back to back (a stream of uploads): each waits UPDATE_PAUSE times the last build since the last one
      // began, so that builds take at most a ninth of the event loop, and the uploads meanwhile share one update.
      const wait = this.lastUpdateAt + Boards.UPDATE_PAUSE * this.lastBuildMs - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      this.lastUpdateAt = performance.now();
      this.queuedRefresh.delete(board);
      const run = this.refreshNow(board).catch((e) => {
        this.log?.warn(`the ${board} board could not be read: ${e instanceof Error ? e.message : String(e)}`);
      });
      this.refreshing.set(board, run);
      await run;
      if (this.refreshing.get(board) === run) this.refreshing.delete(board);
    });
    this.queuedRefresh.set(board, next);
    return next;
  }

  private async refreshNow(board: BoardName): Promise<void> {
    let hit = this.boardCache.get(board);
    // Invalidated: the next reader reads it whole.
    if (!hit) return;
    // Older than the TTL, another process may have changed the board. On SQLite the database says whether any other
    // connection wrote since it was read: if none did, the board is as read (a whole read of thousands of wide rows
    // held the event loop for 100 to 400 ms).
    if (this.clock() - hit.at >= Boards.BOARD_TTL_MS) {
      const version = hit.version === null ? null : await this.version();
      if (version === null || version !== hit.version || this.boardCache.get(board) !== hit) {
        await this.readAll(board);
        return;
      }
      hit.at = this.clock();
      // A failed ranking due to be tried again (a whole read would have found it so).
      if (this.retryDue(board)) hit.rerank = true;
    }
    hit = this.boardCache.get(board);
    if (!hit) return;
    // Uploads of this process since the last read: only their rows are read (an upload never changes another row).
    if (hit.added.size > 0) await this.readAdded(board, hit);
    // A new ranking: the rows as read, with the new places.
    else if (hit.rerank) this.build(board, hit.rows, hit);
  }

  /** Reads a board whole, once at a time (concurrent readers share the read). */
  private readAll(board: BoardName): Promise<Entry[]> {
    let reading = this.reading.get(board);
    if (!reading) {
      reading = (async () => {
        for (;;) {
          const generation = this.generation;
          const readAt = this.clock();
          let rows: ListedRow[];
          let version: string | null;
          try {
            // Taken before the read: a write by another connection during the read moves it past this.
            version = await this.version();
            rows = await q.listBoard(this.db, board);
          } catch (e) {
            // The database away (a restart, or dropped): the board as last read, rather than no board.
            const last = this.lastEntries.get(board);
            if (last && isDatabaseAway(e)) return last;
            throw e;
          }
          // Changed while it was read (an admin's action, new gold): read again.
          if (generation !== this.generation) continue;
          const read = new Map(rows.map((r) => [r.id, r]));
          // Uploads stored while it was read may be missing from it: their rows are read alone.
          const late = [...this.recentlyAdded].filter(([id, at]) => at >= readAt - 1000 && !read.has(id));
          for (const r of await q.listBoardRows(
            this.db,
            board,
            late.map(([id]) => id),
          ))
            read.set(r.id, r);
          return this.build(board, read, { at: readAt, added: new Set(), version });
        }
      })().finally(() => this.reading.delete(board));
      this.reading.set(board, reading);
    }
    return reading;
  }

  private async readAdded(board: BoardName, hit: BoardCacheEntry): Promise<Entry[]> {
    const ids = [...hit.added];
    hit.added.clear();
    const found = await q.listBoardRows(this.db, board, ids);
    // The board was invalidated or read again meanwhile (a hidden entry must not come back): as it is now.
    if (this.boardCache.get(board) !== hit) return this.board(board);
    // Added to the rows in place (a copy of thousands per upload): the entry built from them replaces this one.
    const rows = hit.rows;
    for (const r of found) rows.set(r.id, r);
    // Uploads stored during the read are read by the next update.
    // A full read that finished meanwhile holds them already; building from either is the same board. The rows
    // are as old as the read they came from: the next read of them all is due when it would have been.
    return this.build(board, rows, hit);
  }

  /**
   * The entries of a board's rows: each row's entry is made once and kept while the row stays as it is (a board of
   * thousands is read every second; parsing each summary again was most of a read), ranked, with the ranking's
   * places; the ranking is scheduled when the board it was computed for is no longer this one.
   */
  private build(
    board: BoardName,
    rows: Map<string, ListedRow>,
    /** When the rows were read, with `version()` then; uploads stored since, which the next update reads. */
    read: Pick<BoardCacheEntry, 'at' | 'added' | 'version'>,
  ): Entry[] {
    const { at, added, version } = read;
    const began = performance.now();
    const exact = this.exact();
    const made: Entry[] = [];
    // The board's signature: the rows' digests combined by XOR, so that it needs no sort (ids are unique, and each
    // digest covers its row's id: two boards agree on it when they hold the same rows, as they are).
    const signed = new Uint32Array(8);
    for (const row of rows.values()) {
      let kept = this.rowCache.get(row.id);
      // The same row object (the rows kept from the last read): unchanged without a look; read again: field by field.
      if (kept && kept.row !== row && sameRow(kept.row, row)) kept.row = row;
      if (!kept || kept.row !== row) {
        kept = {
          row,
          entry: toEntry(row, undefined, { exact }),
          digest: new Uint32Array(
            Uint8Array.from(
              createHash('sha256')
                .update(`${row.id}\t${row.overall}\t${row.released}\t${row.summary}`)
                .digest(),
            ).buffer,
          ),
        };
        this.rowCache.set(row.id, kept);
      }
      made.push(kept.entry);
      for (let i = 0; i < 8; i++) signed[i] = (signed[i] as number) ^ (kept.digest[i] as number);
    }
    const signature = `${rows.size}:${Buffer.from(signed.buffer).toString('hex')}`;
    const last = this.rankings.get(board);
    // A failed recomputation (the database away a moment) is tried again a while later, changes or not.
    if (last?.signature !== signature || this.retryDue(board)) {
      if (last?.error) last.signature = '';
      this.scheduleRanking(board, signature, [...rows.values()]);
    }
    const state = this.rankings.get(board);
    const entries = withRanks(rank(made), state?.ranking ?? null, this.placed);
    // A repeat links only to an entry that is on the board (never a hidden or rejected one).
    if (entries.some((e) => e.duplicate_of)) {
      const visible = new Set(entries.map((e) => e.id));
      entries.forEach((e, i) => {
        if (e.duplicate_of && !visible.has(e.duplicate_of)) entries[i] = { ...e, duplicate_of: null };
      });
    }
    this.boardCache.set(board, { at, rows, entries, added, rerank: false, version });
    this.lastEntries.set(board, entries);
    this.lastBuildMs = performance.now() - began;
    // Entries no board holds any more are forgotten.
    if (this.rowCache.size > 2 * (rows.size + (this.boardCache.get(other(board))?.rows.size ?? 0)) + 64) {
      const held = new Set([...rows.keys(), ...(this.boardCache.get(other(board))?.rows.keys() ?? [])]);
      for (const id of this.rowCache.keys()) if (!held.has(id)) this.rowCache.delete(id);
    }
    return entries;
  }

  /**
   * What moves when anybody but this instance changed the database (null: not known, PostgreSQL): the database's
   * count of other connections' writes, and the changes other instances on this connection announced.
   */
  private async version(): Promise<string | null> {
    const v = await q.dataVersion(this.db);
    return v === null ? null : `${v}:${(announced.get(this.db) ?? 0) - this.ownAnnounced}`;
  }

  /** A change to the boards made by this process, told to the other instances on its connection. */
  private announce(): void {
    announced.set(this.db, (announced.get(this.db) ?? 0) + 1);
    this.ownAnnounced++;
  }

  /** Whether the board's last ranking failed long enough ago to be tried again. */
  private retryDue(board: BoardName): boolean {
    const last = this.rankings.get(board);
    return (
      last !== undefined &&
      last.error !== null &&
      this.clock() - Date.parse(last.at) >= Boards.RANKING_RETRY_MS
    );
  }

  /** The board's ranking as the page and the API show it (computed in the background; see `settled`). */
  ranking(board: BoardName): RankingState {
    const r = this.rankings.get(board);
    return {
      ranking: r?.ranking ?? null,
      current: r !== undefined && this.wanted.get(board)?.signature === r.signature,
      computed_at: r?.at ?? null,
      error: r?.error ?? null,
    };
  }

  /** Resolves when no ranking is being computed (tests, and a server that wants its boards ranked before it serves). */
  async settled(): Promise<void> {
    for (;;) {
      const pending = [
        ...this.computing.values(),
        ...this.refreshing.values(),
        ...this.queuedRefresh.values(),
        ...this.reading.values(),
      ];
      if (pending.length === 0) break;
      await Promise.allSettled(pending);
    }
    await this.scorer.rowsSaved();
  }

  /**
   * Recomputes a board's ranking off the page request: one at a time per board; a change during a recomputation
   * starts another when it ends. A failure is logged once and keeps the previous ranking.
   */
  private scheduleRanking(board: BoardName, signature: string, rows: readonly ListedRow[]): void {
    this.wanted.set(board, { signature, rows });
    if (this.computing.has(board)) return;
    const run = async () => {
      let took = 0;
      for (;;) {
        const { signature: target, rows } = this.wanted.get(board) as {
          signature: string;
          rows: ListedRow[];
        };
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
          const ranking = await this.computeRanking(board, rows);
          this.rankings.set(board, {
            signature: target,
            ranking,
            at: new Date(this.clock()).toISOString(),
            error: null,
          });
        } catch (e) {
          const error = e instanceof Error ? e.message : String(e);
          this.log?.warn(`the ${board} board's ranking could not be computed: ${error}`);
          // `at` is when it failed: the next try is due RANKING_RETRY_MS later.
          this.rankings.set(board, {
            signature: target,
            ranking: previous?.ranking ?? null,
            at: new Date(this.clock()).toISOString(),
            error,
          });
        }
        // The board is built again with the new places, and replaces the one readers get when it is ready.
        const cached = this.boardCache.get(board);
        if (cached) {
          cached.rerank = true;
          void this.refresh(board);
        }
        took = Date.now() - started;
      }
    };
    this.computing.set(
      board,
      run().finally(() => this.computing.delete(board)),
    );
  }

  /**
   * A board's ranking from its rows as read for its page (the same rows: visible and scored; reading them again,
   * past each row's stored result, held the event loop for 100 to 400 ms at 5,000 entries, once per upload).
   */
  private async computeRanking(board: BoardName, listed: readonly ListedRow[]): Promise<BoardRanking> {
    const rows = listed
      .filter((r) => r.source !== 'campaign')
      .sort((a, b) =>
        a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : 1,
      );
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
      // Ranked on exact counts under the Ladder: a campaign's human rows alone (gold/release.ts).
      if (!cached || (ladder && r.source !== 'campaign')) continue;
      entries.push({ id: r.id, stats: cached.stats, inTasks: true, inOverall: true });
    }
    // Under the Ladder a task on hidden gold of the public board (ECG2Pathology) is ranked on nothing: its exact
    // scores would order the entries. The public overall is the five public tasks', on public gold.
    const held = HELD_TASKS.public;
    const tasks =
      board === 'public' && this.options.closedRelease === 'ladder'
        ? BOARD_TASKS.public.filter((t) => !held.includes(t))
        : BOARD_TASKS[board];
    return this.scorer.rank(
      {
        board,
        tasks,
        overall: OVERALL_TASKS[board],
        split: BOARD_SPLIT[board],
        resamples: Math.max(this.options.bootstrap, 0),
        seed: this.options.seed,
        alpha: 0.05,
        entries,
      },
      // The rows in the database: a restart reads them instead of drawing them again.
      databaseRowStore(this.db, (m) => this.log?.warn(m)),
    );
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
    this.announce();
    this.generation++;
    this.boardCache.clear();
    this.compareCache.clear();
  }

  /**
   * A new upload of this process was stored: its row is read alone (other rows are as they were), and the boards
   * that hold it replace the ones readers get. Resolves when they have (the uploader's next read shows it).
   */
  added(id: string): Promise<void> {
    this.announce();
    const boards = [...this.boardCache].map(([board, hit]) => {
      hit.added.add(id);
      return board;
    });
    const now = this.clock();
    this.recentlyAdded.set(id, now);
    for (const [old, at] of this.recentlyAdded) if (at < now - 10_000) this.recentlyAdded.delete(old);
    this.compareCache.clear();
    return Promise.all(boards.map((b) => this.refresh(b))).then(() => undefined);
  }
}

interface BoardCacheEntry {
  at: number;
  rows: Map<string, ListedRow>;
  entries: Entry[];
  /** Uploads of this process stored since the rows were read. */
  added: Set<string>;
  /** A new ranking arrived: the entries are built again from the rows. */
  rerank: boolean;
  /** `Boards.version()` when the rows were read (null: PostgreSQL, read again whenever the TTL is over). */
  version: string | null;
}

const other = (board: BoardName): BoardName => (board === 'public' ? 'closed' : 'public');

/** Whether a row read again is the row read before, field by field. */
function sameRow(a: ListedRow, b: ListedRow): boolean {
  for (const k of Object.keys(b) as (keyof ListedRow)[]) if (a[k] !== b[k]) return false;
  return Object.keys(a).length === Object.keys(b).length;
}

/**
 * Entries with their places from a ranking (none where the ranking does not hold them); each made once per entry and
 * ranking (`placed`), as an entry is kept while its row is unchanged.
 */
function withRanks(
  entries: Entry[],
  ranking: BoardRanking | null,
  placed: WeakMap<Entry, { ranking: BoardRanking; entry: Entry }>,
): Entry[] {
  if (!ranking) return entries;
  return entries.map((e) => {
    const hit = placed.get(e);
    if (hit?.ranking === ranking) return hit.entry;
    const tasks: Entry['tasks'] = {};
    for (const [name, cell] of Object.entries(e.tasks)) {
      const place: RankCell | undefined = ranking.tasks[name]?.entries[e.id];
      tasks[name] = place ? { ...cell, place } : cell;
    }
    const place = ranking.overall?.entries[e.id];
    const entry = { ...e, tasks, ...(place ? { place } : {}) };
    placed.set(e, { ranking, entry });
    return entry;
  });
}

/**
 * Replicate rows kept in the database. A failed write is reported to `warn` and costs only a draw at the next
 * restart.
 */
export function databaseRowStore(db: Kysely<Database>, warn: (message: string) => void): RowStore {
  return {
    load: async (task, ids) => {
      const found = await q.replicateRowsOf(db, task, ids);
      const rows = decodeReplicateRows(found.map((r) => r.data));
      const out = new Map<string, { key: string; row: NonNullable<(typeof rows)[number]> }>();
      found.forEach((r, i) => {
        const row = rows[i];
        if (row) out.set(r.submission_id, { key: r.key, row });
      });
      return out;
    },
    save: async (task, rows, gone) => {
      try {
        await q.saveReplicateRows(
          db,
          rows.map((r) => ({ submission_id: r.id, task, key: r.key, data: encodeReplicateRow(r.row) })),
        );
        await q.dropReplicateRows(db, task, gone);
      } catch (e) {
        warn(`replicate rows could not be kept: ${e instanceof Error ? e.message : String(e)}`);
      }
    },
  };
}
