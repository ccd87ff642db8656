/** Reference data for scoring: a task's split (gold) and its train label inventory, loaded once per process. */
import { ifPresent, loadSplit, readGoldLabels } from '../data/load.js';
import { resolveDataDir } from '../data/paths.js';
import type { Split, TaskDefinition } from '../tasks/types.js';
import type { Reference } from './validate.js';

export class ReferenceLoader {
  readonly dataDir: string;
  private readonly cache = new Map<string, Promise<Reference>>();

  constructor(dataDir?: string) {
    this.dataDir = resolveDataDir(dataDir);
  }

  /** The split's records, or no records where the file is missing; invalid data files throw. */
  load(task: TaskDefinition, split: Split, options: { withRecords?: boolean } = {}): Promise<Reference> {
    const withRecords = options.withRecords ?? true;
    const key = `${task.name}/${split}/${withRecords}`;
    let hit = this.cache.get(key);
    if (!hit) {
      hit = this.read(task, split, withRecords);
      this.cache.set(key, hit);
    }
    return hit;
  }

  private async read(task: TaskDefinition, split: Split, withRecords: boolean): Promise<Reference> {
    const ref: Reference = { split };
    if (withRecords) {
      const records = await ifPresent(loadSplit(task, split, { dataDir: this.dataDir }));
      if (records) ref.records = records;
    } else ref.fileGoldOnly = true;
    if (task.kind === 'ranking') {
      const labels = await ifPresent(readGoldLabels(task, 'train', { dataDir: this.dataDir }));
      if (labels) ref.trainLabels = labels;
    }
    return ref;
  }
}
