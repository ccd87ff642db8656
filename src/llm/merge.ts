/**
 * `rumedbench merge`: the run folders of one LLM run's shards (`--shard I/N`, on many machines) made into the one
 * run folder the unsharded run would have written. The shards must share their settings (the manifest, less when
 * and where each ran) and the data, and together answer every request of the run exactly once; then their journals
 * are joined and the run ends as a run does (finishRun): the same predictions, byte for byte, and the same scores.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { canonical } from '../data/canonical.js';
import { RumedbenchError, UsageError } from '../errors.js';
import { type Logger, silentLogger } from '../log.js';
import { providerInfoOf, readRunLog, sharedSettings } from '../scoring/run-log.js';
import { getTask } from '../tasks/registry.js';
import { Journal } from './journal.js';
import type { Perturbation } from './perturb.js';
import type { PromptTemplate } from './prompt.js';
import type { SamplingParams } from './provider.js';
import { planRequests } from './requests.js';
import { finishRun, type LlmRunResult, shardOf } from './run.js';

export interface MergeOptions {
  outDir: string;
  dataDir: string;
  bootstrap: number;
  log?: Logger;
}

const settingsHash = (settings: Record<string, unknown>) =>
  createHash('sha256')
    .update(JSON.stringify(canonical(settings)))
    .digest('hex')
    .slice(0, 16);

/** A value read by a schema with its absent optional fields dropped (`exactOptionalPropertyTypes`). */
const withoutUndefined = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

export async function mergeRuns(dirs: readonly string[], o: MergeOptions): Promise<LlmRunResult> {
  const log = o.log ?? silentLogger;
  if (dirs.length === 0) throw new UsageError('merge: name the shards’ run folders');
  if (existsSync(join(o.outDir, 'journal.jsonl')))
    throw new UsageError(`${o.outDir} already holds a run; merge into an empty folder`);
  const shards = dirs.map((dir) => {
    const run = readRunLog(dir);
    if (run.summary.kind !== 'llm' || !run.manifest)
      throw new UsageError(`${dir}: not an LLM run folder with its manifest.json`);
    const { manifest } = run;
    const shard = manifest.shard;
    if (!shard) throw new UsageError(`${dir}: not a shard (its run had no --shard)`);
    const settings = sharedSettings(manifest, run.manifestExtra);
    return {
      dir,
      manifest,
      shard,
      settings,
      hash: settingsHash(settings),
      wallS: run.summary.llm.requests?.wall_s,
    };
  });
  const first = shards[0] as (typeof shards)[number];
  for (const s of shards.slice(1))
    if (s.hash !== first.hash) {
      const differing = (a: Record<string, unknown>, b: Record<string, unknown>) =>
        Object.keys({ ...a, ...b }).filter(
          (k) => JSON.stringify(canonical(a[k])) !== JSON.stringify(canonical(b[k])),
        );
      // The spec repeats the other settings: named by its own fields only where nothing else differs.
      const { spec: specA, ...restA } = s.settings;
      const { spec: specB, ...restB } = first.settings;
      let differ = differing(restA, restB);
      if (differ.length === 0)
        differ = differing(
          (specA ?? {}) as Record<string, unknown>,
          (specB ?? {}) as Record<string, unknown>,
        ).map((k) => `spec.${k}`);
      throw new UsageError(
        `${s.dir} was run with other settings than ${first.dir} (${differ.join(', ')}): not shards of one run`,
      );
    }
  const count = first.shard.count;
  const byIndex = new Map<number, string[]>();
  for (const s of shards) {
    if (s.shard.count !== count)
      throw new UsageError(
        `${s.dir} is shard ${s.shard.index}/${s.shard.count}, ${first.dir} one of ${count}`,
      );
    byIndex.set(s.shard.index, [...(byIndex.get(s.shard.index) ?? []), s.dir]);
  }
  const twice = [...byIndex].filter(([, ds]) => ds.length > 1);
  if (twice.length > 0)
    throw new UsageError(
      twice.map(([i, ds]) => `shard ${i}/${count} given twice: ${ds.join(', ')}`).join('; '),
    );
  const missing = Array.from({ length: count }, (_, i) => i + 1).filter((i) => !byIndex.has(i));
  if (missing.length > 0)
    throw new UsageError(
      `shard(s) ${missing.map((i) => `${i}/${count}`).join(', ')} missing: every shard of the run is needed`,
    );

  // The run's requests, planned from the settings the shards recorded.
  const m = first.manifest;
  if (!m.params)
    throw new UsageError(`${first.dir}: its manifest.json records no sampling parameters (params)`);
  const tasks = Object.keys(m.prompt_versions ?? {}).map(getTask);
  const options = {
    tasks,
    splits: m.splits ?? 'test',
    mode: m.mode ?? 'generate',
    dataDir: o.dataDir,
    // Shards of a run on gold held apart: read without gold, scored on it, as the one run would be.
    ...(typeof m.spec?.gold === 'string' ? { goldDir: m.spec.gold } : {}),
    outDir: o.outDir,
    shots: m.shots ?? 0,
    seed: m.seed ?? 0,
    params: withoutUndefined(m.params) as SamplingParams,
    concurrency: m.concurrency ?? 1,
    ...(typeof m.limit === 'number' ? { limit: m.limit } : {}),
    ...(typeof m.system_override === 'string' ? { system: m.system_override } : {}),
    ...(m.templates ? { templates: withoutUndefined(m.templates) as Record<string, PromptTemplate> } : {}),
    ...(m.label_words === true ? { labelWords: true } : {}),
    ...(m.repeats !== undefined && m.repeats > 1 ? { repeats: m.repeats } : {}),
    ...(m.perturb ? { perturb: withoutUndefined(m.perturb) as Perturbation } : {}),
    ...(typeof m.prompt_variant === 'string' ? { promptVariant: m.prompt_variant } : {}),
    bootstrap: o.bootstrap,
    // The merged folder records the run's spec as one run (no shard), as the unsharded run would.
    ...(m.spec
      ? {
          manifest: {
            spec: { ...m.spec, shard: undefined },
            command: (m.command ?? '').replace(/ --shard \S+/, ''),
          },
        }
      : {}),
  };
  const planned = await planRequests({ ...options, model: m.model, log });
  const hashes = m.data_sha256 ?? {};
  const changed = Object.keys(planned.dataFiles).filter((k) => planned.dataFiles[k] !== hashes[k]);
  if (changed.length > 0)
    throw new UsageError(
      `the data in ${o.dataDir} differ from the shards' (${changed.join(', ')}): give the same --data`,
    );

  // Every request answered by exactly one shard, the one its key belongs to.
  const journals = await Promise.all(
    shards.map(async (s) => ({ s, j: await Journal.open(join(s.dir, 'journal.jsonl')) })),
  );
  const problems: string[] = [];
  let unanswered = 0;
  for (const request of planned.requests) {
    const by = journals.filter(({ j }) => j.get(request.key)?.status === 'ok');
    if (by.length === 0) unanswered++;
    if (by.length > 1)
      problems.push(
        `request ${request.key} (${request.task.name} ${request.record.id}) answered by ${by.map((b) => b.s.dir).join(' and ')}`,
      );
    const home = shardOf(request.key, count);
    for (const b of by)
      if (b.s.shard.index !== home)
        problems.push(`${b.s.dir} answers request ${request.key}, which belongs to shard ${home}/${count}`);
  }
  if (problems.length > 0)
    throw new RumedbenchError(
      'RUN_FOLDER_INVALID',
      `the shards overlap:\n  ${problems.slice(0, 5).join('\n  ')}`,
    );
  if (unanswered > 0)
    throw new RumedbenchError(
      'RUN_INCOMPLETE',
      `${unanswered} of ${planned.requests.length} requests are answered by no shard; finish the shards (--resume, --retry-errors), then merge`,
    );

  mkdirSync(o.outDir, { recursive: true });
  const journalFile = join(o.outDir, 'journal.jsonl');
  writeFileSync(journalFile, shards.map((s) => readFileSync(join(s.dir, 'journal.jsonl'), 'utf8')).join(''));
  const journal = await Journal.open(journalFile);
  const wall = shards.map((s) => s.wallS ?? 0);
  return finishRun({
    options,
    requests: planned.requests,
    planned,
    journal,
    journalFile,
    model: providerInfoOf(m),
    sent: 0,
    wallS: Math.max(...wall),
    log,
    extra: { merged_from: shards.map((s) => ({ dir: s.dir, shard: s.shard })) },
  });
}
