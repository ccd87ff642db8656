/**
 * A folder of gold answers held apart from the data (`--gold DIR`): `<Task>.jsonl`, one line per item with the
 * task's id field and gold field, as a leaderboard's host or a hospital keeps a closed test's answers. Every bad
 * line is named (file, line, id, what was expected); a file that names no task is refused, never skipped.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { readJsonlFile } from '../data/jsonl.js';
import { DataInvalidError, type DataIssue, UsageError } from '../errors.js';
import type { Prediction } from '../metrics/item-stats.js';
import { didYouMean, getTask, isTaskName } from '../tasks/registry.js';
import type { TaskDefinition } from '../tasks/types.js';
import type { GoldOverrides } from './reference.js';
import { canonicalAnswer, checkAnswer, checkRankingGold } from './validate.js';

/**
 * Reads a gold folder. `taskOf` names the task of a file's name: the registry's by default; `tasks check` gives the
 * definitions it is checking, which it does not register.
 */
export async function readGoldDir(
  dir: string,
  taskOf: (name: string) => TaskDefinition | undefined = (name) =>
    isTaskName(name) ? getTask(name) : undefined,
): Promise<GoldOverrides> {
  if (!existsSync(dir) || !statSync(dir).isDirectory())
    throw new UsageError(`--gold ${dir}: not a folder (expected a folder of <Task>.jsonl gold files)`);
  const out: Record<string, Map<string, Prediction>> = {};
  const issues: DataIssue[] = [];
  for (const name of readdirSync(dir).sort()) {
    if (!name.endsWith('.jsonl')) continue;
    const taskName = name.slice(0, -'.jsonl'.length);
    const file = join(dir, name);
    const task = taskOf(taskName);
    if (!task)
      throw new UsageError(`${file}: names no task${didYouMean(taskName)} (gold files are <Task>.jsonl)`);
    const gold = new Map<string, Prediction>();
    for await (const entry of readJsonlFile(file)) {
      if ('error' in entry) {
        issues.push({ file, line: entry.line, message: entry.error });
        continue;
      }
      const rec = entry.value as Record<string, unknown> | null;
      const id = rec?.[task.idField];
      if (typeof id !== 'string' || id === '') {
        issues.push({
          file,
          line: entry.line,
          message: `field "${task.idField}" (the id) is missing or not a string`,
        });
        continue;
      }
      const at = { file, line: entry.line, id };
      const value = rec?.[task.goldField];
      // A ranking task's gold is one label; its answers are lists.
      const problem =
        task.kind === 'ranking'
          ? checkRankingGold(task, value)
          : value === undefined || value === null
            ? { message: 'is missing', expected: 'the gold answer' }
            : checkAnswer(task, value);
      if (problem) {
        issues.push({
          ...at,
          message: `field "${task.goldField}" (gold) ${problem.message}; expected ${problem.expected}`,
        });
        continue;
      }
      if (gold.has(id)) {
        issues.push({ ...at, message: 'duplicate id' });
        continue;
      }
      gold.set(id, canonicalAnswer(task, value));
    }
    out[task.name] = gold;
  }
  if (issues.length > 0) throw new DataInvalidError(issues);
  if (Object.keys(out).length === 0) throw new UsageError(`--gold ${dir}: no <Task>.jsonl gold files in it`);
  return out;
}
