/**
 * Rank intervals and tie groups on the boards. Each scored entry keeps its per-item counts (the same counts its
 * scores came from) server-side, deflated; from them each entry's replicate row of each task is drawn once and kept
 * in memory and in the database (`ReplicateRows`, `RowStore`: an upload draws its own rows only, a restart reads
 * them, and draws only those not found, spread over the threads). A board's ranking is recomputed from the rows in
 * low-priority worker threads (one job per task, then one for the overall: ../scorer.ts) whenever the board
 * changes, never on a page request; each entry's rank in each replicate is kept too (`KeptRankSets`), so that a
 * few changed entries move the others' ranks instead of every replicate being ranked anew. Only aggregates leave:
 * per entry its rank, the rank's 95% interval and its group letters (among the best `TESTED_TOP` of a task or of
 * the overall; none below them), per task the minimum detectable effect (statistics: ../../metrics/ranking.ts).
 */
import { createHash } from 'node:crypto';
import { deflateSync, inflateSync } from 'fflate';
import { buildItemStats, type ItemStats, statsLayout } from '../../metrics/item-stats.js';
import {
  drawsFromRows,
  drawTask,
  moveRanks,
  rankDraws,
  rankOverallDraws,
  replicateRanks,
  type TaskDraws,
} from '../../metrics/ranking.js';
import type { ReferenceLoader } from '../../scoring/reference.js';
import type { ValidatedSubmission } from '../../scoring/score.js';
import { getTask } from '../../tasks/registry.js';
import type { Split, TaskDefinition } from '../../tasks/types.js';
import type { BoardName } from '../db/schema.js';

/** One task's counts as kept: `key` names the item set (a hash of the sorted ids), `data` the counts. */
export interface StoredTaskStats {
  key: string;
  /** The counts of each item, items in the order of their sorted ids: Int32, deflated, base64. */
  data: string;
}
export type StoredItemStats = Record<string, StoredTaskStats>;

/** A hash naming a set of item ids (sorted), so that only entries scored on the same items are ranked together. */
export function itemSetKey(sortedIds: readonly string[]): string {
  return createHash('sha256').update(sortedIds.join('\n')).digest('hex').slice(0, 32);
}

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** The per-item counts of every task of a validated submission, as the database keeps them. */
export function encodeItemStats(validated: ValidatedSubmission): StoredItemStats {
  const out: StoredItemStats = {};
  for (const t of validated.tasks) {
    if (!t.items) continue;
    const items = [...t.items].sort(byId);
    const stats = buildItemStats(t.task, items);
    const ints = Int32Array.from(stats.stats);
    out[t.task.name] = {
      key: itemSetKey(items.map((i) => i.id)),
      data: Buffer.from(deflateSync(new Uint8Array(ints.buffer))).toString('base64'),
    };
  }
  return out;
}

/** One task's stored counts as rows of the task's layout, or undefined where they do not fit it. */
export function decodeRows(task: TaskDefinition, stored: StoredTaskStats): Float64Array | undefined {
  const bytes = inflateSync(new Uint8Array(Buffer.from(stored.data, 'base64')));
  const ints = new Int32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  return ints.length % statsLayout(task).width === 0 ? Float64Array.from(ints) : undefined;
}

function decode(
  task: TaskDefinition,
  stored: StoredTaskStats,
  ids: readonly string[],
): ItemStats | undefined {
  const stats = decodeRows(task, stored);
  if (!stats || stats.length !== ids.length * statsLayout(task).width) return undefined;
  return { task, ids, stats };
}

/** An entry's place: its rank, the rank's 95% interval, its group letters. */
export interface RankCell {
  rank: number;
  rank_ci: [number, number];
  group: string;
}

export interface BoardRanking {
  resamples: number;
  seed: number;
  alpha: number;
  /** Per task: items, clusters, the minimum detectable effect in points, and each ranked entry's place. */
  tasks: Record<
    string,
    { n: number; clusters: number | null; mde: number | null; entries: Record<string, RankCell> }
  >;
  /** The board's overall (entries with every task of the board), or null when no entry has them all. */
  overall: { mde: number | null; entries: Record<string, RankCell> } | null;
}

export interface RankJob {
  board: BoardName;
  /** The board's tasks ranked, in its order. */
  tasks: readonly string[];
  /** The tasks the board's overall averages (among `tasks`): a defined task shown beside them is not in it. */
  overall: readonly string[];
  split: Split;
  resamples: number;
  seed: number;
  alpha: number;
  /** Entries with their counts; `tasks`: whether they take part per task, `overall`: in the overall. */
  entries: { id: string; stats: StoredItemStats; inTasks: boolean; inOverall: boolean }[];
}

const cell = (s: { rank: number; rank_ci: [number, number]; group: string }): RankCell => ({
  rank: s.rank,
  rank_ci: s.rank_ci,
  group: s.group,
});

/** An entry's replicate row of one task: its score, and its score in each replicate (in shared memory). */
export interface ReplicateRow {
  observed: number;
  boot: Float64Array;
}

/** The replicate rows to draw for one task of a board: entries whose rows are not kept (new, or changed). */
export interface DrawRowsJob extends Pick<RankJob, 'board' | 'split' | 'resamples' | 'seed'> {
  task: string;
  entries: { id: string; stats: StoredTaskStats }[];
}

/** One task's item ids (sorted), their set's key and their clusters (the layout every row of the task is drawn on). */
async function layoutOf(task: TaskDefinition, split: Split, references: ReferenceLoader) {
  const records = (await references.load(task, split)).records;
  if (!records) return undefined;
  const sorted = [...records].sort(byId);
  const ids = sorted.map((r) => r.id);
  const field = task.cluster;
  const clusters = field ? sorted.map((r) => r.raw[field]) : undefined;
  const usable = clusters?.every((c) => typeof c === 'string') ? (clusters as string[]) : undefined;
  return { ids, key: itemSetKey(ids), clusters: usable };
}

/**
 * The replicate rows of some entries of one task, in the job's order (null: not scored on the board's items). An
 * entry's row depends only on its own counts and the task's layout, seed and resamples, never on the other entries
 * (../../metrics/ranking.ts, `drawsFromRows`), so rows are drawn a few entries at a time, on any thread, and kept.
 */
export async function drawBoardRows(
  job: DrawRowsJob,
  references: ReferenceLoader,
): Promise<(ReplicateRow | null)[]> {
  const task = getTask(job.task);
  const layout = await layoutOf(task, job.split, references);
  if (!layout) return job.entries.map(() => null);
  const systems: { name: string; stats: ItemStats }[] = [];
  const at = job.entries.map((e) => {
    const stats = e.stats.key === layout.key ? decode(task, e.stats, layout.ids) : undefined;
    if (!stats) return -1;
    systems.push({ name: e.id, stats });
    return systems.length - 1;
  });
  if (systems.length === 0) return job.entries.map(() => null);
  const d = drawTask(systems, {
    resamples: job.resamples,
    seed: job.seed,
    shared: true,
    ...(layout.clusters ? { clusters: layout.clusters } : {}),
  });
  return at.map((j) =>
    j < 0 ? null : { observed: d.observed[j] as number, boot: d.boot[j] as Float64Array },
  );
}

/** One task of a board's ranking: its entries' counts of that task and their replicate rows. */
export interface RankTaskJob extends Omit<RankJob, 'tasks' | 'overall' | 'entries'> {
  task: string;
  /** The entries ranked on this task (their rows drawn), in the board's order. */
  entries: { id: string; stats: StoredTaskStats; row: ReplicateRow }[];
  /** Ranks kept from the last ranking of this task, where few entries changed since. */
  kept?: KeptRanks;
}

/** What the overall needs of one task: per entry in it, its score and its score in each replicate. */
export type TaskReplicates = Pick<TaskDraws, 'names' | 'observed' | 'boot'>;

/**
 * One task of a board: its ranking from its entries' kept replicate rows. Ranks and intervals come from every row;
 * the pairs, groups and MDE are among the best `TESTED_TOP` by score, whose counts alone are decoded.
 */
export async function rankBoardTask(
  job: RankTaskJob,
  references: ReferenceLoader,
): Promise<{ ranking: BoardRanking['tasks'][string]; ranks: Float64Array[] } | null> {
  if (job.entries.length === 0) return null;
  const task = getTask(job.task);
  const layout = await layoutOf(task, job.split, references);
  if (!layout) return null;
  const boot = job.entries.map((e) => e.row.boot);
  const d = drawsFromRows(
    task,
    {
      names: job.entries.map((e) => e.id),
      observed: job.entries.map((e) => e.row.observed),
      boot,
      statsOf: (i) =>
        decode(task, (job.entries[i] as RankTaskJob['entries'][number]).stats, layout.ids) as ItemStats,
    },
    { n: layout.ids.length, ...(layout.clusters ? { clusters: layout.clusters } : {}) },
  );
  const ranks = ranksOf(boot, job.kept);
  const r = rankDraws(d, { alpha: job.alpha, pairs: false, se: false, ranks });
  return {
    ranking: {
      n: r.n,
      clusters: r.clusters,
      mde: r.mde,
      entries: Object.fromEntries(r.systems.map((s) => [s.name, cell(s)])),
    },
    ranks,
  };
}

/**
 * Ranks kept from the last ranking (in shared memory: moved in place, for the host to keep), what changed since:
 * per entry its kept ranks or null (new or changed), and the rows of the entries gone.
 */
export interface KeptRanks {
  ranks: (Float64Array | null)[];
  removed: Float64Array[];
}

/** Each entry's rank in each replicate: moved from kept ones where given, else ranked anew (shared memory). */
function ranksOf(boot: readonly Float64Array[], kept: KeptRanks | undefined): Float64Array[] {
  const R = boot[0]?.length ?? 0;
  if (!kept) return replicateRanks(boot, R, true);
  const keptAt = kept.ranks.flatMap((r, i) => (r ? [i] : []));
  return moveRanks(
    boot,
    keptAt.map((i) => kept.ranks[i] as Float64Array),
    keptAt,
    kept.removed,
    true,
  );
}

/**
 * A board's overall rows from its tasks' replicates: the entries in every task (in the first task's order), each
 * its mean score and the mean of its replicates, summed in the tasks' order as `rankOverallDraws` sums them (so
 * that ranking these rows as one task is, bit for bit, ranking the tasks). Null where the overall is not ranked.
 */
export function overallRows(
  tasks: readonly TaskReplicates[],
  cache?: Map<string, { parts: Float64Array[]; observed: number; boot: Float64Array }>,
): TaskReplicates | null {
  if (tasks.length === 0 || tasks.some((t) => (t.boot[0]?.length ?? 0) === 0)) return null;
  const at = tasks.map((t) => new Map(t.names.map((id, i) => [id, i])));
  const names = (tasks[0] as TaskReplicates).names.filter((id) => at.every((m) => m.has(id)));
  if (cache) {
    const present = new Set(names);
    for (const id of cache.keys()) if (!present.has(id)) cache.delete(id);
  }
  if (names.length === 0) return null;
  const R = (tasks[0] as TaskReplicates).boot[0]?.length ?? 0;
  const observed: number[] = [];
  const boot: Float64Array[] = [];
  for (const id of names) {
    const parts = tasks.map(
      (t, x) => t.boot[(at[x] as Map<string, number>).get(id) as number] as Float64Array,
    );
    // The same task rows as last time: the same overall row (the same object, so that its kept ranks are moved).
    const hit = cache?.get(id);
    if (hit?.parts.every((p, x) => p === parts[x])) {
      observed.push(hit.observed);
      boot.push(hit.boot);
      continue;
    }
    let sum = 0;
    const out = new Float64Array(new SharedArrayBuffer(R * Float64Array.BYTES_PER_ELEMENT));
    tasks.forEach((t, x) => {
      sum += t.observed[(at[x] as Map<string, number>).get(id) as number] as number;
      const b = parts[x] as Float64Array;
      for (let r = 0; r < R; r++) (out[r] as number) += (b[r] as number) / tasks.length;
    });
    observed.push(sum / tasks.length);
    boot.push(out);
    cache?.set(id, { parts, observed: sum / tasks.length, boot: out });
  }
  return { names, observed, boot };
}

/** The overall of a board from its overall rows (`overallRows`), ranks moved from kept ones where given. */
export function rankBoardOverall(job: { rows: TaskReplicates; alpha: number; kept?: KeptRanks }): {
  ranking: NonNullable<BoardRanking['overall']>;
  ranks: Float64Array[];
} {
  const ranks = ranksOf(job.rows.boot, job.kept);
  const r = rankOverallDraws([job.rows], job.rows.names, { alpha: job.alpha, pairs: false, ranks });
  return {
    ranking: { mde: r.mde, entries: Object.fromEntries(r.systems.map((s) => [s.name, cell(s)])) },
    ranks,
  };
}

/**
 * A board's replicate rows as kept between rankings, per task: an upload costs its own rows (one per task), and the
 * intervals of the others are recomputed from the kept ones. Keyed by what a row depends on (board and split: the
 * items; seed, resamples) and, per entry, by its stored counts, so that a changed entry is drawn again.
 */
export class ReplicateRows {
  private readonly kept = new Map<string, Map<string, { data: string; row: ReplicateRow | null }>>();
  /** Rows being written to the store (a ranking does not wait for them; `saved` does). */
  private saving: Promise<void> = Promise.resolve();

  /** Resolves when the rows drawn so far are in the store. */
  saved(): Promise<void> {
    return this.saving;
  }

  /**
   * One task's rows for a job's entries that take part, drawing the missing ones with `draw` (given the entries in
   * batches); rows of entries no longer on the board are dropped.
   */
  async of(
    job: RankJob,
    task: string,
    draw: (entries: DrawRowsJob['entries']) => Promise<(ReplicateRow | null)[]>,
    batches: number,
    store?: RowStore,
  ): Promise<Map<string, ReplicateRow>> {
    const name = [job.board, job.split, task, job.seed, job.resamples].join('\0');
    let rows = this.kept.get(name);
    if (!rows) {
      rows = new Map();
      this.kept.set(name, rows);
    }
    const wanted = job.entries.flatMap((e) => {
      const stats = e.stats[task];
      return stats && (e.inTasks || e.inOverall) ? [{ id: e.id, stats }] : [];
    });
    const present = new Set(wanted.map((e) => e.id));
    const gone = [...rows.keys()].filter((id) => !present.has(id));
    for (const id of gone) rows.delete(id);
    let missing = wanted.filter((e) => rows.get(e.id)?.data !== e.stats.data);
    // A restart: the rows kept in the store, where they were drawn from the same counts, items, seed and resamples.
    const keys = new Map(missing.map((e) => [e.id, rowKey(job, e.stats)]));
    if (store && missing.length > 0) {
      const found = await store.load(
        task,
        missing.map((e) => e.id),
      );
      for (const e of missing) {
        const f = found.get(e.id);
        if (f && f.key === keys.get(e.id)) rows.set(e.id, { data: e.stats.data, row: f.row });
      }
      missing = missing.filter((e) => rows.get(e.id)?.data !== e.stats.data);
    }
    // A batch draws its entries together (their shared baselines make that cheaper than one by one); as many
    // batches as threads, so that a cold start uses them all.
    const size = Math.max(MIN_BATCH, Math.ceil(missing.length / Math.max(1, batches)));
    const chunks: (typeof missing)[] = [];
    for (let i = 0; i < missing.length; i += size) chunks.push(missing.slice(i, i + size));
    const drawn = await Promise.all(chunks.map((c) => draw(c)));
    chunks.forEach((c, x) => {
      c.forEach((e, i) => {
        (rows as Map<string, { data: string; row: ReplicateRow | null }>).set(e.id, {
          data: e.stats.data,
          row: (drawn[x] as (ReplicateRow | null)[])[i] ?? null,
        });
      });
    });
    if (store) {
      const fresh = chunks.flatMap((c, x) =>
        c.flatMap((e, i) => {
          const row = (drawn[x] as (ReplicateRow | null)[])[i];
          return row ? [{ id: e.id, key: keys.get(e.id) as string, row }] : [];
        }),
      );
      if (fresh.length > 0 || gone.length > 0)
        this.saving = this.saving.then(() => store.save(task, fresh, gone));
    }
    const out = new Map<string, ReplicateRow>();
    for (const e of wanted) {
      const row = rows.get(e.id)?.row;
      if (row) out.set(e.id, row);
    }
    return out;
  }

  clear(): void {
    this.kept.clear();
  }
}

/** Where replicate rows outlive the process (the database: ./queries.ts). */
export interface RowStore {
  /** The kept rows of one task of these entries, with the key each was kept under. */
  load(task: string, ids: readonly string[]): Promise<Map<string, { key: string; row: ReplicateRow }>>;
  /** Keeps new rows of one task and drops the rows of entries gone from the board; never rejects. */
  save(
    task: string,
    rows: readonly { id: string; key: string; row: ReplicateRow }[],
    gone: readonly string[],
  ): Promise<void>;
}

/** What a row depends on: the entry's counts (and the items they are of), the seed and the resamples. */
export function rowKey(job: Pick<RankJob, 'seed' | 'resamples'>, stats: StoredTaskStats): string {
  return createHash('sha256')
    .update(`${stats.key}\0${job.seed}\0${job.resamples}\0${stats.data}`)
    .digest('hex')
    .slice(0, 32);
}

/** A row as stored: Float64 (this machine's order: little-endian on every platform Node.js runs on), base64. */
export function encodeReplicateRow(row: ReplicateRow): string {
  const out = new Float64Array(1 + row.boot.length);
  out[0] = row.observed;
  out.set(row.boot, 1);
  return Buffer.from(out.buffer).toString('base64');
}

/** Stored rows back, in one block of shared memory (handed to the ranking threads without a copy). */
export function decodeReplicateRows(texts: readonly string[]): (ReplicateRow | null)[] {
  const bytes = texts.map((t) => Buffer.from(t, 'base64'));
  const total = bytes.reduce((n, b) => n + b.byteLength, 0);
  const block = new Float64Array(new SharedArrayBuffer(total - (total % 8)));
  let at = 0;
  return bytes.map((b) => {
    if (b.byteLength % 8 !== 0 || b.byteLength < 8) return null;
    const view = block.subarray(at, at + b.byteLength / 8);
    view.set(new Float64Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)));
    at += b.byteLength / 8;
    return { observed: view[0] as number, boot: view.subarray(1) };
  });
}

/**
 * The replicate ranks of the last ranking of each task and overall of each board, with the rows they were ranked
 * from: the next ranking moves them (`moveRanks`) where few entries changed, instead of sorting every replicate.
 */
export class KeptRankSets {
  private readonly sets = new Map<string, { ids: string[]; boot: Float64Array[]; ranks: Float64Array[] }>();

  /** What changed since the ranks kept under `name`, or undefined: none kept, or too much changed. */
  kept(name: string, ids: readonly string[], boot: readonly Float64Array[]): KeptRanks | undefined {
    const last = this.sets.get(name);
    if (!last) return undefined;
    const at = new Map(last.ids.map((id, i) => [id, i]));
    const used = new Set<number>();
    const ranks = ids.map((id, i) => {
      const p = at.get(id);
      // The same row object: the entry's counts are unchanged since (ReplicateRows replaces a changed one).
      if (p === undefined || last.boot[p] !== boot[i]) return null;
      used.add(p);
      return last.ranks[p] as Float64Array;
    });
    const removed = last.boot.filter((_, p) => !used.has(p));
    const changed = ranks.length - used.size + removed.length;
    return changed <= MAX_MOVED ? { ranks, removed } : undefined;
  }

  keep(name: string, ids: readonly string[], boot: readonly Float64Array[], ranks: Float64Array[]): void {
    this.sets.set(name, { ids: [...ids], boot: [...boot], ranks });
  }

  clear(): void {
    this.sets.clear();
  }
}

/**
 * Above this many entries added, changed or removed since the last ranking, the ranks are computed anew: moving
 * them costs O(R·k) per entry, ranking anew O(R·k·log k) in all.
 */
const MAX_MOVED = 8;

/** Fewer entries than this are drawn in one batch (a batch's fixed cost, the replicates' weights, is then small). */
const MIN_BATCH = 64;

/** One task's share of a board's job: its entries ranked per task, each with its row. */
export function taskJob(job: RankJob, task: string, rows: ReadonlyMap<string, ReplicateRow>): RankTaskJob {
  const { tasks: _tasks, overall: _overall, entries, ...rest } = job;
  return {
    ...rest,
    task,
    entries: entries.flatMap((e) => {
      const row = rows.get(e.id);
      const stats = e.stats[task];
      return e.inTasks && row && stats ? [{ id: e.id, stats, row }] : [];
    }),
  };
}

/** What the overall reads of one task: the rows of the entries in the overall, in the board's order. */
export function overallReplicates(job: RankJob, rows: ReadonlyMap<string, ReplicateRow>): TaskReplicates {
  const names: string[] = [];
  const observed: number[] = [];
  const boot: Float64Array[] = [];
  for (const e of job.entries) {
    const row = rows.get(e.id);
    if (!e.inOverall || !row) continue;
    names.push(e.id);
    observed.push(row.observed);
    boot.push(row.boot);
  }
  return { names, observed, boot };
}

/** The ranking from its tasks' parts and its overall. */
export function assemble(
  job: Pick<RankJob, 'tasks' | 'resamples' | 'seed' | 'alpha'>,
  parts: readonly (BoardRanking['tasks'][string] | null)[],
  overall: BoardRanking['overall'],
): BoardRanking {
  const tasks: BoardRanking['tasks'] = {};
  job.tasks.forEach((t, i) => {
    const r = parts[i];
    if (r) tasks[t] = r;
  });
  return { resamples: job.resamples, seed: job.seed, alpha: job.alpha, tasks, overall };
}
