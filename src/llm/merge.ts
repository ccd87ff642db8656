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
import { readRunFolder } from '../scoring/run-folder.js';
import { getTask } from '../tasks/registry.js';
import { Journal } from './journal.js';
import type { Perturbation } from './perturb.js';
import type { PromptTemplate } from './prompt.js';
import type { SamplingParams } from './provider.js';
import { type Mode, planRequests, type SplitChoice } from './requests.js';
import { finishRun, type LlmRunResult, shardOf } from './run.js';

export interface MergeOptions {
  outDir: string;
  dataDir: string;
  bootstrap: number;
  log?: Logger;
}

/** Settings that may differ between shards: when, which shard, and how many requests each kept in flight. */
const PER_SHARD = new Set(['created', 'shard', 'concurrency', 'command']);

/** The run's spec (manifest.json `spec`) less what may differ between shards. */
function unsharded(spec: unknown): unknown {
  if (!spec || typeof spec !== 'object') return spec;
  const { shard: _s, concurrency: _c, ...rest } = spec as Record<string, unknown>;
  return rest;
}

const settingsHash = (manifest: Record<string, unknown>) =>
  createHash('sha256')
    .update(
      JSON.stringify(
        canonical(
          Object.fromEntries(
            Object.entries(manifest)
              .filter(([k]) => !PER_SHARD.has(k))
              .map(([k, v]) => [k, k === 'spec' ? unsharded(v) : v]),
          ),
        ),
      ),
    )
    .digest('hex')
    .slice(0, 16);

export async function mergeRuns(dirs: readonly string[], o: MergeOptions): Promise<LlmRunResult> {
  const log = o.log ?? silentLogger;
  if (dirs.length === 0) throw new UsageError('merge: name the shards’ run folders');
  if (existsSync(join(o.outDir, 'journal.jsonl')))
    throw new UsageError(`${o.outDir} already holds a run; merge into an empty folder`);
  const shards = dirs.map((dir) => {
    const run = readRunFolder(dir);
    if (run.summary.kind !== 'llm' || !run.manifest)
      throw new UsageError(`${dir}: not an LLM run folder with its manifest.json`);
    const manifest = run.manifest as Record<string, unknown>;
    const shard = manifest.shard as { index: number; count: number } | null | undefined;
    if (!shard) throw new UsageError(`${dir}: not a shard (its run had no --shard)`);
    return { dir, manifest, shard, hash: settingsHash(manifest) };
  });
  const first = shards[0] as (typeof shards)[number];
  for (const s of shards.slice(1))
    if (s.hash !== first.hash) {
      const differing = (a: Record<string, unknown>, b: Record<string, unknown>, skip: Set<string>) =>
        Object.keys({ ...a, ...b }).filter(
          (k) => !skip.has(k) && JSON.stringify(canonical(a[k])) !== JSON.stringify(canonical(b[k])),
        );
      // The spec repeats the other settings: named by its own fields only where nothing else differs.
      let differ = differing(s.manifest, first.manifest, new Set([...PER_SHARD, 'spec']));
      if (differ.length === 0)
        differ = differing(
          (unsharded(s.manifest.spec) ?? {}) as Record<string, unknown>,
          (unsharded(first.manifest.spec) ?? {}) as Record<string, unknown>,
          new Set(),
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

  // The run's plan, from the settings the shards recorded.
  const m = first.manifest;
  const tasks = Object.keys((m.prompt_versions as Record<string, string>) ?? {}).map(getTask);
  const options = {
    tasks,
    splits: m.splits as SplitChoice,
    mode: (m.mode as Mode) ?? 'generate',
    dataDir: o.dataDir,
    outDir: o.outDir,
    shots: m.shots as number,
    seed: m.seed as number,
    params: m.params as SamplingParams,
    concurrency: m.concurrency as number,
    ...(typeof m.limit === 'number' ? { limit: m.limit } : {}),
    ...(typeof m.system_override === 'string' ? { system: m.system_override } : {}),
    ...(m.templates ? { templates: m.templates as Record<string, PromptTemplate> } : {}),
    ...(m.label_words === true ? { labelWords: true } : {}),
    ...(typeof m.repeats === 'number' && m.repeats > 1 ? { repeats: m.repeats } : {}),
    ...(m.perturb ? { perturb: m.perturb as Perturbation } : {}),
    ...(typeof m.prompt_variant === 'string' ? { promptVariant: m.prompt_variant } : {}),
    bootstrap: o.bootstrap,
    // The merged folder records the run's spec as one run (no shard), as the unsharded run would.
    ...(m.spec && typeof m.spec === 'object'
      ? {
          manifest: {
            spec: { ...(m.spec as Record<string, unknown>), shard: undefined },
            command: String(m.command ?? '').replace(/ --shard \S+/, ''),
          },
        }
      : {}),
  };
  const plan = await planRequests({ ...options, model: m.model, log });
  const hashes = m.data_sha256 as Record<string, string>;
  const changed = Object.keys(plan.dataFiles).filter((k) => plan.dataFiles[k] !== hashes[k]);
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
  for (const job of plan.requests) {
    const by = journals.filter(({ j }) => j.get(job.key)?.status === 'ok');
    if (by.length === 0) unanswered++;
    if (by.length > 1)
      problems.push(
        `request ${job.key} (${job.task.name} ${job.record.id}) answered by ${by.map((b) => b.s.dir).join(' and ')}`,
      );
    const home = shardOf(job.key, count);
    for (const b of by)
      if (b.s.shard.index !== home)
        problems.push(`${b.s.dir} answers request ${job.key}, which belongs to shard ${home}/${count}`);
  }
  if (problems.length > 0)
    throw new RumedbenchError(
      'RUN_FOLDER_INVALID',
      `the shards overlap:\n  ${problems.slice(0, 5).join('\n  ')}`,
    );
  if (unanswered > 0)
    throw new RumedbenchError(
      'RUN_INCOMPLETE',
      `${unanswered} of ${plan.requests.length} requests are answered by no shard; finish the shards (--resume, --retry-errors), then merge`,
    );

  mkdirSync(o.outDir, { recursive: true });
  const journalFile = join(o.outDir, 'journal.jsonl');
  writeFileSync(journalFile, shards.map((s) => readFileSync(join(s.dir, 'journal.jsonl'), 'utf8')).join(''));
  const journal = await Journal.open(journalFile);
  // What the provider described of itself: the manifest less what the run writes there.
  const written = new Set([
    ...[
      'rumedbench_version',
      'created',
      'mode',
      'label_words',
      'params',
      'seed',
      'shots',
      'splits',
      'concurrency',
    ],
    ...[
      'limit',
      'system_override',
      'templates',
      'prompt_versions',
      'data_sha256',
      'shard',
      'merged_from',
      'repeats',
      'perturb',
      'prompt_variant',
    ],
  ]);
  const model = Object.fromEntries(Object.entries(m).filter(([k]) => !written.has(k)));
  const wall = shards.map(
    (s) =>
      (readRunFolder(s.dir).summary as { llm?: { requests?: { wall_s: number } } }).llm?.requests?.wall_s ??
      0,
  );
  return finishRun({
    options,
    jobs: plan.requests,
    plan,
    journal,
    journalFile,
    model,
    sent: 0,
    wallS: Math.max(...wall),
    log,
    extra: { merged_from: shards.map((s) => ({ dir: s.dir, shard: s.shard })) },
  });
}
