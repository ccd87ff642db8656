/**
 * Rank intervals and tie groups on the boards. Each scored entry keeps its per-item counts (the same counts its
 * scores came from) server-side, deflated; a board's ranking is recomputed from them in low-priority worker threads
 * (one job per task, then one for the overall: ../scorer.ts) whenever the board changes, never on a page request,
 * and only aggregates leave: per entry its rank, the rank's 95%
 * interval and its group letters, per task the minimum detectable effect (statistics: ../../metrics/ranking.ts).
 */
import { createHash } from 'node:crypto';
import { deflateSync, inflateSync } from 'fflate';
import { buildItemStats, type ItemStats, statsLayout } from '../../metrics/item-stats.js';
import { drawTask, rankDraws, rankOverallDraws, type TaskDraws } from '../../metrics/ranking.js';
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

/** One task of a board's ranking: its entries' counts of that task only. */
export interface RankTaskJob extends Omit<RankJob, 'tasks' | 'overall'> {
  task: string;
}

/** What the overall needs of one task: per entry in it, its score and its score in each replicate. */
export type TaskReplicates = Pick<TaskDraws, 'names' | 'observed' | 'boot'>;

/** One task of a board: its ranking (of the entries that take part per task) and its replicates for the overall. */
export async function rankBoardTask(
  job: RankTaskJob,
  references: ReferenceLoader,
): Promise<{ ranking: BoardRanking['tasks'][string] | null; replicates: TaskReplicates | null }> {
  const task = getTask(job.task);
  const records = (await references.load(task, job.split)).records;
  if (!records) return { ranking: null, replicates: null };
  const sorted = [...records].sort(byId);
  const ids = sorted.map((r) => r.id);
  const key = itemSetKey(ids);
  const systems: { name: string; stats: ItemStats }[] = [];
  const inTasks: number[] = [];
  const inOverall: number[] = [];
  for (const e of job.entries) {
    const stored = e.stats[job.task];
    if (!stored || stored.key !== key || !(e.inTasks || e.inOverall)) continue;
    const stats = decode(task, stored, ids);
    if (!stats) continue;
    if (e.inTasks) inTasks.push(systems.length);
    if (e.inOverall) inOverall.push(systems.length);
    systems.push({ name: e.id, stats });
  }
  if (systems.length === 0) return { ranking: null, replicates: null };
  const field = task.cluster;
  const clusters = field ? sorted.map((r) => r.raw[field]) : undefined;
  const usable = clusters?.every((c) => typeof c === 'string') ? (clusters as string[]) : undefined;
  const d = drawTask(systems, {
    resamples: job.resamples,
    seed: job.seed,
    ...(usable ? { clusters: usable } : {}),
  });
  const r = inTasks.length > 0 ? rankDraws(d, { alpha: job.alpha, pairs: false, only: inTasks }) : null;
  return {
    ranking: r && {
      n: r.n,
      clusters: r.clusters,
      mde: r.mde,
      entries: Object.fromEntries(r.systems.map((s) => [s.name, cell(s)])),
    },
    replicates: {
      names: inOverall.map((i) => d.names[i] as string),
      observed: inOverall.map((i) => d.observed[i] as number),
      boot: inOverall.map((i) => d.boot[i] as Float64Array),
    },
  };
}

/** The overall of a board from its tasks' replicates: entries in every task, ranked on the mean of their scores. */
export function rankBoardOverall(
  tasks: readonly (TaskReplicates | null)[],
  alpha: number,
): BoardRanking['overall'] {
  if (tasks.length === 0 || tasks.some((t) => t === null || (t.boot[0]?.length ?? 0) === 0)) return null;
  const all = tasks as TaskReplicates[];
  const everywhere = (all[0] as TaskReplicates).names.filter((id) => all.every((t) => t.names.includes(id)));
  if (everywhere.length === 0) return null;
  const r = rankOverallDraws(all, everywhere, { alpha, pairs: false });
  return { mde: r.mde, entries: Object.fromEntries(r.systems.map((s) => [s.name, cell(s)])) };
}

/** One task's share of a board's job: the entries with that task's counts only (what its worker needs). */
export function taskJob(job: RankJob, task: string): RankTaskJob {
  const { tasks: _tasks, overall: _overall, ...rest } = job;
  return {
    ...rest,
    task,
    entries: job.entries.flatMap((e) =>
      e.stats[task] ? [{ ...e, stats: { [task]: e.stats[task] as StoredTaskStats } }] : [],
    ),
  };
}

/** The ranking from its tasks' parts and its overall. */
export function assemble(
  job: Pick<RankJob, 'tasks' | 'resamples' | 'seed' | 'alpha'>,
  parts: readonly { ranking: BoardRanking['tasks'][string] | null }[],
  overall: BoardRanking['overall'],
): BoardRanking {
  const tasks: BoardRanking['tasks'] = {};
  job.tasks.forEach((t, i) => {
    const r = parts[i]?.ranking;
    if (r) tasks[t] = r;
  });
  return { resamples: job.resamples, seed: job.seed, alpha: job.alpha, tasks, overall };
}
