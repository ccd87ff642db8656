/**
 * Tasks defined by users: the definition files named by `--tasks-dir` and `RUMEDBENCH_TASKS` (a path list, `:`
 * apart), each a file or a folder whose `.yaml`, `.yml` and `.json` files are all definitions. Loaded once at the
 * start of a command, then every command sees them in the registry as it sees the built-in tasks.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { TaskDefinitionError, UsageError } from '../errors.js';
import { loadTaskFile } from './definition-file.js';
import { registerTask, shippedFile } from './registry.js';
import type { TaskDefinition } from './types.js';

export const TASKS_ENV = 'RUMEDBENCH_TASKS';

/** The paths to read: `--tasks-dir` values first, then those of `RUMEDBENCH_TASKS`. */
export function taskPaths(flag: readonly string[] = [], env: NodeJS.ProcessEnv = process.env): string[] {
  const fromEnv = (env[TASKS_ENV] ?? '').split(delimiter).filter((p) => p.trim() !== '');
  return [...flag, ...fromEnv];
}

const DEFINITION = /\.(ya?ml|json)$/i;

/** The definition files a path stands for: itself, or a folder's definition files in name order. */
export function definitionFiles(path: string): string[] {
  // A shipped definition by its name (ECG2Pathology): a leaderboard puts it on its boards this way.
  const shipped = existsSync(path) ? undefined : shippedFile(path);
  if (shipped) return [shipped];
  if (!existsSync(path)) throw new UsageError(`${path}: no such task definition file or folder`);
  if (!statSync(path).isDirectory()) return [path];
  const files = readdirSync(path)
    .filter((f) => DEFINITION.test(f))
    .sort()
    .map((f) => join(path, f));
  if (files.length === 0)
    throw new UsageError(`${path}: no task definitions in this folder (expected .yaml, .yml or .json files)`);
  return files;
}

/** Reads, checks and registers every definition under `paths`; all files' problems are reported together. */
export function loadUserTasks(paths: readonly string[]): TaskDefinition[] {
  const loaded: TaskDefinition[] = [];
  const problems: string[] = [];
  for (const file of paths.flatMap(definitionFiles)) {
    try {
      const task = loadTaskFile(file);
      registerTask(task);
      loaded.push(task);
    } catch (e) {
      if (e instanceof TaskDefinitionError) problems.push(...e.problems);
      else if (e instanceof UsageError) problems.push(e.message);
      else throw e;
    }
  }
  if (problems.length > 0) throw new TaskDefinitionError(paths.join(delimiter), problems);
  return loaded;
}
