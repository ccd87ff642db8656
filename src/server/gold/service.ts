/**
 * The gold the host holds: the closed tests' (private_test), and the test split of a task whose records only its host
 * has (ECG2Pathology on the public board). Imported by the admin (`serve import-gold [--split test]`), kept in the
 * database, loaded into the scoring workers of every process that serves (`sync`), and, once changed, every
 * submission of the board it scores is scored again. Nothing else reads it: validation never sees it, and what leaves
 * is aggregate scores, released by the Ladder.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import { readJsonlFile } from '../../data/jsonl.js';
import { loadSplit } from '../../data/load.js';
import { RumedbenchError } from '../../errors.js';
import type { LadderItems, LadderState } from '../../metrics/ladder.js';
import type { HeldGold } from '../../scoring/reference.js';
import type { EvaluationResult } from '../../scoring/score.js';
import { canonicalAnswer, checkAnswer } from '../../scoring/validate.js';
import { getTask, heldByHost, isTaskName } from '../../tasks/registry.js';
import type { Split } from '../../tasks/types.js';
import { summarize } from '../boards/entries.js';
import type { StoredItemStats } from '../boards/ranking.js';
import type { Boards } from '../boards/service.js';
import type { BoardName, Database } from '../db/schema.js';
import { HELD_TASKS, heldTasksOf, ladderItemsOf } from '../score-upload.js';
import type { Scorer } from '../scorer.js';
import type { UploadLimits } from '../upload.js';
import * as q from './queries.js';
import { type ClosedRelease, releaseOnHeldGold, rowHeldTasks, scorableFiles } from './release.js';

export interface GoldOptions {
  dataDir: string;
  bootstrap: number;
  seed: number;
  limits: UploadLimits;
  closedRelease: ClosedRelease;
}

/** The gold the host holds, as stored: what a new scoring pool starts with (`openLeaderboard`). */
export function heldGold(db: Kysely<Database>): Promise<HeldGold> {
  return q.loadHeldGold(db);
}

export class Gold {
  private seen = 'none';
  /** Run after closed-test gold is imported (the campaigns re-publish their human rows). */
  readonly afterImport: (() => Promise<void>)[] = [];

  constructor(
    private readonly db: Kysely<Database>,
    private readonly scorer: Scorer,
    private readonly boards: Boards,
    private readonly options: GoldOptions,
  ) {}

  /** Loads the held gold into the workers if another process (or the admin command) changed it. */
  async sync(): Promise<void> {
    const version = await q.goldVersion(this.db);
    if (version === this.seen) return;
    await this.scorer.setGold(await q.loadHeldGold(this.db));
    this.seen = version;
  }

  /**
   * Imports held gold from `<Task>.jsonl` files (id and answer per line, every id of the split once), then re-scores
   * every submission of the board that split is scored on: `private_test` (the default), the closed tests;
   * `test`, a public-board task whose test records only its host holds. Every problem is listed; nothing is imported
   * unless all is right.
   */
  async importGold(
    dir: string,
    options: { split?: 'test' | 'private_test' } = {},
  ): Promise<{ split: Split; board: BoardName; tasks: Record<string, number>; rescored: number }> {
    const split = options.split ?? 'private_test';
    const board: BoardName = split === 'test' ? 'public' : 'closed';
    const problems: string[] = [];
    const imported: { task: string; answers: { id: string; answer: string | readonly string[] }[] }[] = [];
    const names = readdirSync(dir).filter((n) => n.endsWith('.jsonl'));
    if (names.length === 0) throw new RumedbenchError('USAGE', `${dir}: no <Task>.jsonl files`);
    const held = HELD_TASKS[board];
    await this.refuseFewerTasks(board, held);
    for (const name of names.sort()) {
      const taskName = name.slice(0, -'.jsonl'.length);
      const file = join(dir, name);
      if (!isTaskName(taskName) || !held.includes(taskName)) {
        problems.push(
          split === 'test'
            ? `${file}: not a task whose test gold the host holds (${held.length > 0 ? held.join(', ') : 'none is loaded: --tasks-dir ECG2Pathology loads MedBench’s'}); a test split in the data files has its gold there`
            : `${file}: not a closed-test task (${held.join(', ')})`,
        );
        continue;
      }
      const task = getTask(taskName);
      // A task whose records only its host holds (ECG2Pathology): the gold's ids are the split, each once.
      const ids = heldByHost(task, split)
        ? undefined
        : new Set((await loadSplit(task, split, { dataDir: this.options.dataDir })).map((r) => r.id));
      const answers = new Map<string, string | readonly string[]>();
      for await (const line of readJsonlFile(file)) {
        const at = `${file}:${line.line}`;
        if ('error' in line) {
          problems.push(`${at}: ${line.error}`);
          continue;
        }
        const v = line.value as Record<string, unknown>;
        const id = v?.[task.idField];
        const answer = v?.[task.goldField] ?? v?.answer;
        if (typeof id !== 'string' && typeof id !== 'number') {
          problems.push(`${at}: no "${task.idField}"`);
          continue;
        }
        const sid = String(id);
        if (ids && !ids.has(sid))
          problems.push(`${at} (id ${sid}): not an id of ${taskName}'s ${split} split`);
        else if (answers.has(sid)) problems.push(`${at} (id ${sid}): repeated`);
        else {
          // A ranking task's gold is one label; every other gold has the shape of an answer (a defined task's too).
          const bad =
            task.kind === 'ranking'
              ? typeof answer === 'string' && task.labelPattern.test(answer)
                ? undefined
                : { expected: task.labelDescription }
              : answer === undefined || answer === null
                ? { expected: 'an answer' }
                : checkAnswer(task, answer);
          if (bad) problems.push(`${at} (id ${sid}): answer must be ${bad.expected}`);
          else answers.set(sid, canonicalAnswer(task, answer));
        }
      }
      if (answers.size === 0 && problems.length === 0) problems.push(`${file}: no answers`);
      const missing = [...(ids ?? [])].filter((i) => !answers.has(i));
      if (missing.length > 0)
        problems.push(
          `${file}: ${missing.length} ${split} id(s) without an answer, e.g. ${missing.slice(0, 3).join(', ')}`,
        );
      imported.push({ task: taskName, answers: [...answers].map(([id, answer]) => ({ id, answer })) });
    }
    if (problems.length > 0) {
      const shown = problems.slice(0, 20).join('\n  ');
      const more = problems.length > 20 ? `\n  … and ${problems.length - 20} more` : '';
      throw new RumedbenchError(
        'DATA_INVALID',
        `gold not imported, ${problems.length} problem(s):\n  ${shown}${more}`,
      );
    }
    for (const i of imported) await q.replaceHeldGold(this.db, split, i.task, i.answers);
    await this.sync();
    const rescored = await this.rescore(board);
    for (const hook of this.afterImport) await hook();
    return {
      split,
      board,
      tasks: Object.fromEntries(imported.map((i) => [i.task, i.answers.length])),
      rescored,
    };
  }

  /**
   * Refuses a re-score on fewer hidden tasks than the board's rows were scored with (this process started without the
   * `--tasks-dir` that loaded one): it would release each row on a subset, one task's score to within a release
   * step, and restart every ladder without that task's counts (issue #57). Nothing is imported.
   */
  private async refuseFewerTasks(board: BoardName, held: readonly string[]): Promise<void> {
    const scored = new Set<string>();
    for (const r of await q.submissionsOfBoard(this.db, board)) {
      if (r.source === 'campaign' || r.status === 'rejected') continue;
      const { tasks, unscored } = JSON.parse(r.result) as Partial<EvaluationResult>;
      for (const t of rowHeldTasks(board, [...Object.keys(tasks ?? {}), ...Object.keys(unscored ?? {})]))
        scored.add(t);
    }
    const missing = [...scored].filter((t) => !held.includes(t)).sort();
    if (missing.length > 0)
      throw new RumedbenchError(
        'USAGE',
        `the ${board} board's submissions were scored on hidden gold of ${missing.join(', ')}, which this run does not hold: run import-gold with the --tasks-dir that defines ${missing.length === 1 ? 'it' : 'them'} (--tasks-dir ECG2Pathology for MedBench's), or every ladder would be re-scored on fewer tasks`,
      );
  }

  /**
   * Scores every submission of a board again from its stored files (after new gold), each released through the gate
   * (release.ts): uploads on hidden gold climb their Ladder again in upload order, as they would have with this gold
   * from the start. A rejected row stays as it is; a file of a task the row was not on hidden gold for when it came is
   * set aside.
   */
  async rescore(board: BoardName): Promise<number> {
    // Human rows from campaigns cover a sample, not the split: their campaign scores them again. A rejected row was
    // never scored and never is: new gold would otherwise show what its uploader was refused (issue #57).
    const rows = (await q.submissionsOfBoard(this.db, board)).filter(
      (r) => r.source !== 'campaign' && r.status !== 'rejected',
    );
    const updates: Parameters<typeof q.updateResults>[1][number][] = [];
    const ladders = new Map<string, LadderState>();
    // Each ladder's best after the climb again (null: none of its uploads is scored now).
    const bests = new Map<string, q.LadderBest | null>();
    // A ladder whose best the admin deleted climbs again from that best's stored state, not from nothing: otherwise
    // its next row would be released as a first upload, exactly (issue #57).
    const here = new Set(rows.map((r) => r.id));
    const keys = [...new Set(rows.flatMap((r) => (r.ladder_key === null ? [] : [r.ladder_key])))];
    for (const [key, best] of await q.ladderBests(this.db, keys)) {
      if (best.id !== null && here.has(best.id)) continue;
      const items = ladderItemsOf(board, JSON.parse(best.item_stats) as StoredItemStats);
      if (!items) continue;
      ladders.set(key, { released: best.released, items });
      bests.set(key, best);
    }
    for (const row of rows) {
      const stored = JSON.parse(row.result) as EvaluationResult;
      const { files, setAside } = scorableFiles(board, stored, await q.getSubmissionFiles(this.db, row.id));
      const scored = await this.scorer.score({
        files: files.map((f) => ({ name: f.name, data: new TextEncoder().encode(f.content) })),
        board,
        source: 'upload',
        bootstrap: this.options.bootstrap,
        seed: this.options.seed,
        limits: this.options.limits,
      });
      const outcome =
        setAside.length > 0
          ? { ...scored, result: { ...scored.result, warnings: [...setAside, ...scored.result.warnings] } }
          : scored;
      const items = outcome.status === 'scored' ? ladderItemsOf(board, outcome.itemStats) : undefined;
      const key = row.ladder_key;
      const release = await releaseOnHeldGold(
        {
          mode: this.options.closedRelease,
          heldTasks: heldTasksOf(board, outcome.result),
          ladderKey: key,
          items,
        },
        () => (key === null ? undefined : ladders.get(key)),
      );
      let released: number | null = null;
      let improved: number | null = null;
      if (release.kind === 'ladder' && key !== null) {
        if (release.step.improved) {
          ladders.set(key, { released: release.step.released, items: items as LadderItems });
          bests.set(key, {
            id: row.id,
            released: release.step.released,
            item_stats: JSON.stringify(outcome.itemStats),
          });
        }
        released = release.step.released;
        improved = release.step.improved ? 1 : 0;
      }
      updates.push({
        id: row.id,
        result: JSON.stringify(outcome.result),
        summary: JSON.stringify(summarize(outcome.result)),
        overall: outcome.overall,
        status: outcome.status,
        released,
        ladder_improved: improved,
        item_stats: outcome.itemStats ? JSON.stringify(outcome.itemStats) : null,
      });
    }
    for (const row of rows)
      if (row.ladder_key !== null && !bests.has(row.ladder_key)) bests.set(row.ladder_key, null);
    await q.updateResults(this.db, updates);
    await q.resetLadders(this.db, bests);
    this.boards.invalidate();
    return updates.length;
  }
}
