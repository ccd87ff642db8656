/** Where the task files live: `--data DIR`, else `RUMEDBENCH_DATA`, else a per-user cache folder. */
import { join } from 'node:path';
import envPaths from 'env-paths';
import { DATA_DIR_MARK, type Split, type TaskDefinition } from '../tasks/types.js';

export const DATA_ENV = 'RUMEDBENCH_DATA';

export function defaultDataDir(): string {
  return join(envPaths('rumedbench', { suffix: '' }).cache, 'data');
}

/** Resolves the data folder; `explicit` is the `--data` flag. */
export function resolveDataDir(explicit?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (explicit !== undefined && explicit !== '') return explicit;
  const fromEnv = env[DATA_ENV];
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  return defaultDataDir();
}

/**
 * The task's file for the split: the one its definition names (`{data}/…` under the data folder), else upstream's
 * layout, `<Task>/<split>_v1.jsonl`.
 */
export function splitPath(dataDir: string, task: TaskDefinition, split: Split): string {
  const file = task.files?.[split];
  if (file === undefined) return join(dataDir, task.name, `${split}_v1.jsonl`);
  return file.startsWith(DATA_DIR_MARK) ? join(dataDir, file.slice(DATA_DIR_MARK.length)) : file;
}
