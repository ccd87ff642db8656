/**
 * Stage one of an LLM run: every request of the run, from the tasks' definitions and the data. A generation request
 * is a chat (messages); a log-likelihood request is a prompt and its candidate continuations (tasks without a
 * log-likelihood form, RuMedNER, stay generative in that mode). Each request has a key that the journal files its
 * answer under. (A "job" is the queue's: a chunk of a cell's requests that one worker takes.)
 */
import { createHash } from 'node:crypto';
import { sha256File } from '../data/checksum.js';
import { ifPresent, loadSplit, readGoldLabels } from '../data/load.js';
import { splitPath } from '../data/paths.js';
import type { Logger } from '../log.js';
import { isChoiceTask } from '../tasks/registry.js';
import type { PromptContext, Split, TaskDefinition, TaskRecord } from '../tasks/types.js';
import { type LoglikItem, loglikItem } from './loglik.js';
import { type Perturbation, perturbRecord } from './perturb.js';
import { buildMessages, type ChatMessage, drawExamples, type PromptTemplate, requestKey } from './prompt.js';
import type { SamplingParams } from './provider.js';

export type SplitChoice = 'test' | 'private_test' | 'both';
export type Mode = 'generate' | 'loglik';

interface RequestBase {
  task: TaskDefinition;
  split: Split;
  record: TaskRecord;
  key: string;
  ctx: PromptContext;
  /** `--repeats`: which asking of the item this is (from 0), with its own sampling seed in `params`. */
  repeat?: number;
  params?: SamplingParams;
  /** `--perturb`: the record as the model reads it (`record` keeps the original, for its id and gold)... */
  shown?: TaskRecord;
  /** ...and, for shuffled options, the original label of each label shown. */
  answerMap?: Record<string, string>;
}
export type LlmRequest =
  | (RequestBase & { kind: 'chat'; messages: ChatMessage[] })
  | (RequestBase & { kind: 'loglik'; item: LoglikItem });

interface PlanOptions {
  tasks: readonly TaskDefinition[];
  splits: SplitChoice;
  dataDir: string;
  /** The test splits' gold is held apart (`--gold DIR`): their records are read without it. */
  goldApart?: boolean;
  mode: Mode;
  shots: number;
  seed: number;
  limit?: number;
  system?: string;
  templates?: Record<string, PromptTemplate>;
  /** Log-likelihood: score label words (RuMedNLI) instead of option numbers. */
  labelWords?: boolean;
  params: SamplingParams;
  model: unknown;
  log: Logger;
  /** Each generation item asked this many times, the sampling seed `seed + r` for the r-th (default 1). */
  repeats?: number;
  /** What the model reads is perturbed so (seeded by `seed` and each item's id). */
  perturb?: Perturbation;
  /** Generation: ask with this formulation of each task's instruction (its `variants`, by id). */
  promptVariant?: string;
}

export interface Plan {
  requests: LlmRequest[];
  /** sha256 of every data file used. */
  dataFiles: Record<string, string>;
  skipped: Record<string, string>;
  /** Labels a uniform guess would choose among, per task. */
  labelSpace: Record<string, number>;
}

const sha256 = async (file: string): Promise<string> => (await sha256File(file)).sha256;

export async function planRequests(o: PlanOptions): Promise<Plan> {
  const requests: LlmRequest[] = [];
  const dataFiles: Record<string, string> = {};
  const skipped: Record<string, string> = {};
  const labelSpace: Record<string, number> = {};
  for (const t of o.tasks) if (t.kind === 'classification') labelSpace[t.name] = t.labels.length;
  const keyParams = { model: o.model, ...o.params };
  for (const task of o.tasks) {
    const splits = (['test', 'private_test'] as const).filter(
      (s) => (o.splits === 'both' || o.splits === s) && (task.splits as readonly Split[]).includes(s),
    );
    if (splits.length === 0) {
      skipped[task.name] = `no ${o.splits === 'both' ? 'test or private_test' : o.splits} split`;
      continue;
    }
    const trainFile = splitPath(o.dataDir, task, 'train');
    let ctx: PromptContext = {};
    if (task.kind === 'ranking') {
      const labels = await ifPresent(readGoldLabels(task, 'train', { dataDir: o.dataDir }));
      if (labels) {
        ctx = { labels: [...labels].sort() };
        labelSpace[task.name] = labels.size;
        dataFiles[`${task.name}/train`] = await sha256(trainFile);
      } else if (o.mode === 'loglik') {
        skipped[task.name] =
          `scoring by log-likelihood ranks the train inventory, and ${trainFile} is missing`;
        o.log.warn(`${task.name}: ${skipped[task.name]}; skipped`);
        continue;
      }
    }
    let examples: TaskRecord[] = [];
    if (o.shots > 0) {
      // Examples come from train, or from the split a defined task names for them.
      const from = task.shotsSplit ?? 'train';
      const shotsFile = splitPath(o.dataDir, task, from);
      const pool = await ifPresent(loadSplit(task, from, { dataDir: o.dataDir }));
      if (!pool) {
        skipped[task.name] = `${o.shots}-shot prompts need ${shotsFile}, which is missing`;
        o.log.warn(`${task.name}: ${skipped[task.name]}; skipped`);
        continue;
      }
      examples = drawExamples(task, pool, o.shots, o.seed);
      dataFiles[`${task.name}/${from}`] = await sha256(shotsFile);
    }
    if (o.promptVariant !== undefined && !task.prompt.variants.some((v) => v.id === o.promptVariant)) {
      skipped[task.name] =
        `no prompt formulation "${o.promptVariant}" (it has ${task.prompt.variants.map((v) => v.id).join(', ')})`;
      continue;
    }
    if (o.perturb?.kind === 'shuffle-options' && !isChoiceTask(task)) {
      skipped[task.name] = 'shuffle-options: its items have no options to shuffle';
      continue;
    }
    const scored = o.mode === 'loglik' && task.prompt.loglik !== undefined;
    for (const split of splits) {
      const records = await ifPresent(
        loadSplit(task, split, { dataDir: o.dataDir, ...(o.goldApart ? { goldApart: true } : {}) }),
      );
      if (!records) {
        o.log.warn(`${task.name}: ${splitPath(o.dataDir, task, split)} is missing; skipped`);
        continue;
      }
      dataFiles[`${task.name}/${split}`] = await sha256(splitPath(o.dataDir, task, split));
      for (const record of records.slice(0, o.limit ?? records.length)) {
        const seen = o.perturb ? perturbRecord(task, record, o.perturb, o.seed) : undefined;
        const asked = seen?.record ?? record;
        const perturbed = seen
          ? { shown: asked, ...(seen.answerMap ? { answerMap: seen.answerMap } : {}) }
          : {};
        if (scored) {
          // The examples of a k-shot prompt exclude the item asked, as in generation.
          const item = loglikItem(
            task,
            asked,
            examples.filter((e) => e.id !== record.id).slice(0, o.shots),
            ctx,
            {
              ...(o.labelWords ? { labelWords: true } : {}),
            },
          );
          const key = createHash('sha256')
            .update(
              JSON.stringify({
                mode: 'loglik',
                model: o.model,
                context: item.context,
                candidates: item.candidates,
              }),
            )
            .digest('hex')
            .slice(0, 32);
          requests.push({ kind: 'loglik', task, split, record, item, key, ctx, ...perturbed });
          continue;
        }
        const messages = buildMessages(task, asked, examples, {
          ...(o.promptVariant !== undefined ? { variant: o.promptVariant } : {}),
          shots: o.shots,
          seed: o.seed,
          context: ctx,
          ...(o.system !== undefined ? { system: o.system } : {}),
          ...(o.templates?.[task.name] ? { template: o.templates[task.name] as PromptTemplate } : {}),
        });
        const repeats = o.repeats ?? 1;
        if (repeats === 1) {
          requests.push({
            kind: 'chat',
            task,
            split,
            record,
            messages,
            key: requestKey(messages, keyParams),
            ctx,
            ...perturbed,
          });
          continue;
        }
        // The r-th asking samples with seed + r; the first keeps the single run's key, so a run can grow repeats.
        for (let r = 0; r < repeats; r++) {
          const params = { ...o.params, seed: (o.params.seed ?? o.seed) + r };
          const key = requestKey(messages, { ...keyParams, ...params });
          requests.push({
            kind: 'chat',
            task,
            split,
            record,
            messages,
            key,
            ctx,
            repeat: r,
            params,
            ...perturbed,
          });
        }
      }
    }
  }
  return { requests, dataFiles, skipped, labelSpace };
}
