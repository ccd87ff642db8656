/** Reference data for scoring: a task's split (gold) and its train label inventory, loaded once per process. */
import { ifPresent, loadSplit, readGoldLabels } from '../data/load.js';
import { resolveDataDir } from '../data/paths.js';
import type { Split, TaskDefinition } from '../tasks/types.js';
import type { Reference } from './validate.js';

/** Gold answers known apart from the data files (a closed test's, imported by a leaderboard's admin): task → id → gold. */
export type GoldOverrides = Readonly<Record<string, ReadonlyMap<string, string | readonly string[]>>>;

export class ReferenceLoader {
  readonly dataDir: string;
  private readonly cache = new Map<string, Promise<Reference>>();
  private readonly privateGold: GoldOverrides;
  private readonly hiddenGold: boolean;
  private readonly gold: GoldOverrides;

  /**
   * `privateGold` gives the private_test split its gold; the data files carry none. `hiddenGold` marks that gold
   * secret (a leaderboard's closed tests): see {@link Reference.hiddenGold}.
   */
  constructor(
    dataDir?: string,
    options: { privateGold?: GoldOverrides; hiddenGold?: boolean; gold?: GoldOverrides } = {},
  ) {
    this.dataDir = resolveDataDir(dataDir);
    this.privateGold = options.privateGold ?? {};
    this.gold = options.gold ?? {};
    this.hiddenGold = options.hiddenGold ?? false;
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

  /**
   * Each item's cluster (the task's cluster field: RuMedNLI's premise), by id; undefined for a task without one or
   * a split whose records are not here.
   */
  async clusters(task: TaskDefinition, split: Split): Promise<ReadonlyMap<string, string> | undefined> {
    const field = task.cluster;
    if (!field) return undefined;
    const records = (await this.load(task, split)).records;
    if (!records) return undefined;
    const out = new Map<string, string>();
    for (const r of records) {
      const c = r.raw[field];
      if (typeof c !== 'string') return undefined;
      out.set(r.id, c);
    }
    return out;
  }

  private async read(task: TaskDefinition, split: Split, withRecords: boolean): Promise<Reference> {
    const ref: Reference = {
      split,
      ...(this.hiddenGold && split === 'private_test' ? { hiddenGold: true } : {}),
    };
    // Gold given apart (`--gold DIR`) is the authority for whatever split is scored.
    const given = this.gold[task.name];
    const gold = given ?? (split === 'private_test' ? this.privateGold[task.name] : undefined);
    if (withRecords || gold) {
      const records = await ifPresent(loadSplit(task, split, { dataDir: this.dataDir }));
      if (records) ref.records = gold ? records.map((r) => ({ ...r, gold: gold.get(r.id) })) : records;
      // No data file here (ECG2Pathology's records are the host's): the gold's ids (given, or imported by a
      // board's admin) are the split.
      else if (gold)
        ref.records = [...gold].map(([id, g], i) => ({
          id,
          gold: g,
          // Hidden gold stays out of the record's fields (what pages and campaigns could show of an item).
          raw: this.hiddenGold ? { [task.idField]: id } : { [task.idField]: id, [task.goldField]: g },
          line: i + 1,
        }));
    } else ref.fileGoldOnly = true;
    if (task.kind === 'ranking') {
      const labels = await ifPresent(readGoldLabels(task, 'train', { dataDir: this.dataDir }));
      if (labels) ref.trainLabels = labels;
    }
    return ref;
  }
}
