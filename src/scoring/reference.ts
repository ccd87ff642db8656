/** Reference data for scoring: a task's split (gold) and its train label inventory, loaded once per process. */

import { existsSync } from 'node:fs';
import { ifPresent, loadSplit, readGoldLabels } from '../data/load.js';
import { resolveDataDir, splitPath } from '../data/paths.js';
import { heldByHost } from '../tasks/registry.js';
import type { Split, TaskDefinition } from '../tasks/types.js';
import type { Reference } from './validate.js';

/** Gold answers known apart from the data files (a closed test's, imported by a leaderboard's admin): task → id → gold. */
export type GoldOverrides = Readonly<Record<string, ReadonlyMap<string, string | readonly string[]>>>;

/** Gold a leaderboard's host holds, per split: the closed tests' (private_test), and a test split only the host has. */
export type HeldGold = Readonly<Partial<Record<Split, GoldOverrides>>>;

export class ReferenceLoader {
  readonly dataDir: string;
  private readonly cache = new Map<string, Promise<Reference>>();
  private readonly heldGold: HeldGold;
  private readonly hiddenGold: boolean;
  private readonly gold: GoldOverrides;
  private readonly namePaths: boolean;
  private readonly scoringOnly: boolean;

  /**
   * `heldGold` gives splits whose data files carry no gold (private_test; a test split only a task's host holds)
   * their gold. `hiddenGold` marks that gold secret (a leaderboard's): see {@link Reference.hiddenGold}. It covers
   * the private_test split and any split whose records only the task's host holds (ECG2Pathology's test, on the
   * public board); the public gold in the data files stays public. `namePaths: false` keeps this machine's paths
   * out of messages (a leaderboard's, whose messages go to uploaders). `scoringOnly` keeps of each record only what
   * scoring and comparing read (id, gold, a tagging task's tokens, the cluster): for a loader that only scores.
   */
  constructor(
    dataDir?: string,
    options: {
      heldGold?: HeldGold;
      hiddenGold?: boolean;
      gold?: GoldOverrides;
      namePaths?: boolean;
      scoringOnly?: boolean;
    } = {},
  ) {
    this.dataDir = resolveDataDir(dataDir);
    this.heldGold = options.heldGold ?? {};
    this.gold = options.gold ?? {};
    this.hiddenGold = options.hiddenGold ?? false;
    this.namePaths = options.namePaths ?? true;
    this.scoringOnly = options.scoringOnly ?? false;
  }

  /** Whether a split's gold is secret here (the scorer then releases nothing per item of it). */
  hidden(task: TaskDefinition, split: Split): boolean {
    return this.hiddenGold && (split === 'private_test' || heldByHost(task, split));
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
      ...(this.hidden(task, split) ? { hiddenGold: true } : {}),
    };
    // Gold given apart (`--gold DIR`) is the authority for whatever split is scored.
    const given = this.gold[task.name];
    const gold = given ?? this.heldGold[split]?.[task.name];
    if (withRecords || gold) {
      const records = await ifPresent(
        loadSplit(task, split, {
          dataDir: this.dataDir,
          ...(gold ? { goldApart: true } : {}),
          ...(this.scoringOnly ? { fields: scoringFields(task) } : {}),
        }),
      );
      if (records) ref.records = gold ? records.map((r) => ({ ...r, gold: gold.get(r.id) })) : records;
      // No data file here (ECG2Pathology's records are the host's): the gold's ids (given, or imported by a
      // board's admin) are the split.
      else if (gold)
        ref.records = [...gold].map(([id, g], i) => ({
          id,
          gold: g,
          // Hidden gold stays out of the record's fields (what pages and campaigns could show of an item).
          raw: ref.hiddenGold ? { [task.idField]: id } : { [task.idField]: id, [task.goldField]: g },
          line: i + 1,
        }));
    } else ref.fileGoldOnly = true;
    if (!ref.records && !ref.fileGoldOnly && this.namePaths) {
      // The place looked in, named: `--data /nonexistent` is then plain, not "not in the data folder" alone.
      ref.notFound = existsSync(this.dataDir)
        ? `${splitPath(this.dataDir, task, split)}: not found`
        : `no such folder: ${this.dataDir}`;
    }
    if (task.kind === 'ranking') {
      const labels = await ifPresent(readGoldLabels(task, 'train', { dataDir: this.dataDir }));
      if (labels) ref.trainLabels = labels;
    }
    return ref;
  }
}

/** The fields of a record that scoring and comparing read. */
function scoringFields(task: TaskDefinition): string[] {
  return [
    task.idField,
    task.goldField,
    ...(task.kind === 'tagging' ? [task.tokensField] : []),
    ...(task.cluster ? [task.cluster] : []),
  ];
}
