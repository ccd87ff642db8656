/**
 * `rumedbench data info`: what is in the data folder, per task and split: record counts, the most frequent
 * labels, and text lengths. Missing or invalid files are named, never fatal.
 */
import { existsSync } from 'node:fs';
import { DataInvalidError } from '../errors.js';
import { median } from '../metrics/quantile.js';
import { TASKS } from '../tasks/registry.js';
import type { Split, TaskDefinition, TaskRecord } from '../tasks/types.js';
import { loadSplit } from './load.js';
import { splitPath } from './paths.js';

interface LengthStats {
  unit: 'chars' | 'tokens';
  min: number;
  median: number;
  mean: number;
  max: number;
}

export interface SplitInfo {
  task: string;
  split: Split;
  file: string;
  status: 'ok' | 'missing' | 'invalid';
  /** Why the file is missing or invalid. */
  problem?: string;
  records?: number;
  /** Records carrying gold (a private test has none). */
  withGold?: number;
  distinctLabels?: number;
  /** Most frequent gold labels (entity types for NER), with counts. */
  topLabels?: { label: string; count: number }[];
  length?: LengthStats;
}

function lengthStats(values: number[], unit: LengthStats['unit']): LengthStats {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    unit,
    min: sorted[0] ?? 0,
    median: median(sorted) ?? 0,
    mean: values.reduce((a, b) => a + b, 0) / Math.max(1, values.length),
    max: sorted[sorted.length - 1] ?? 0,
  };
}

function describe(task: TaskDefinition, records: readonly TaskRecord[], top: number): Partial<SplitInfo> {
  const counts = new Map<string, number>();
  for (const r of records) {
    if (r.gold === undefined) continue;
    // For NER, count entities by type (B- tags) rather than tags.
    const labels =
      typeof r.gold === 'string' ? [r.gold] : r.gold.filter((t) => t.startsWith('B-')).map((t) => t.slice(2));
    for (const l of labels) counts.set(l, (counts.get(l) ?? 0) + 1);
  }
  const topLabels = [...counts.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, top)
    .map(([label, count]) => ({ label, count }));
  const length =
    task.kind === 'tagging'
      ? lengthStats(
          records.map((r) => (r.raw[task.tokensField] as unknown[]).length),
          'tokens',
        )
      : lengthStats(
          records.map((r) => task.inputFields.reduce((n, f) => n + String(r.raw[f] ?? '').length, 0)),
          'chars',
        );
  return {
    records: records.length,
    withGold: records.filter((r) => r.gold !== undefined).length,
    distinctLabels: counts.size,
    topLabels,
    length,
  };
}

/** Information on every split of the given tasks (all by default). */
export async function dataInfo(
  dataDir: string,
  options: { tasks?: readonly TaskDefinition[]; top?: number } = {},
): Promise<SplitInfo[]> {
  const out: SplitInfo[] = [];
  for (const task of options.tasks ?? TASKS) {
    for (const split of task.splits) {
      const file = splitPath(dataDir, task, split);
      const base = { task: task.name, split, file };
      if (!existsSync(file)) {
        out.push({
          ...base,
          status: 'missing',
          problem: 'file not found; `rumedbench data download` fetches it',
        });
        continue;
      }
      try {
        const records = await loadSplit(task, split, { dataDir });
        out.push({ ...base, status: 'ok', ...describe(task, records, options.top ?? 3) });
      } catch (e) {
        if (!(e instanceof DataInvalidError)) throw e;
        out.push({ ...base, status: 'invalid', problem: e.message });
      }
    }
  }
  return out;
}
