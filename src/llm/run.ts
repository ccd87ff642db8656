/**
 * `rumedbench llm`: evaluate a language model on the tasks. Builds each item's prompt, sends the requests with
 * bounded concurrency, journals every reply as it arrives (so a killed run resumes without asking again), parses
 * the replies with the task's parser (an unreadable reply is counted as unparsed and scored as wrong), and writes
 * the run folder: predictions/ (RuMedBench format, scored at once), submission.zip (MedBench platform format, private
 * tests), samples.jsonl, manifest.json and summary.json.
 */
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { strToU8, zipSync } from 'fflate';
import { sha256File } from '../data/checksum.js';
import { toJsonl } from '../data/jsonl.js';
import { ifPresent, loadSplit, readGoldLabels } from '../data/load.js';
import { splitPath } from '../data/paths.js';
import { UsageError } from '../errors.js';
import { type Logger, silentLogger } from '../log.js';
import type { Prediction } from '../metrics/item-stats.js';
import { platformLines, rumedbenchLines } from '../scoring/formats.js';
import { type EvaluationResult, evaluateSubmission } from '../scoring/score.js';
import type { PromptContext, Split, TaskDefinition, TaskRecord } from '../tasks/types.js';
import { VERSION } from '../version.js';
import { Journal, type JournalEntry } from './journal.js';
import { buildMessages, type ChatMessage, drawExamples, type PromptTemplate, requestKey } from './prompt.js';
import type { Provider, SamplingParams } from './provider.js';

export type SplitChoice = 'test' | 'private_test' | 'both';

export interface LlmRunOptions {
  provider: Provider;
  tasks: readonly TaskDefinition[];
  splits?: SplitChoice;
  dataDir: string;
  outDir: string;
  shots?: number;
  seed?: number;
  params: SamplingParams;
  concurrency?: number;
  /** At most this many items per task and split (a quick look). */
  limit?: number;
  /** Continue the run in `outDir`: send only the requests without a successful journal entry. */
  resume?: boolean;
  /** Continue the run, sending only the requests whose last attempt failed. */
  retryErrors?: boolean;
  system?: string;
  templates?: Record<string, PromptTemplate>;
  /** Prices per million prompt and completion tokens, for the cost line. */
  prices?: { prompt: number; completion: number };
  bootstrap?: number;
  logger?: Logger;
  /** Draw a progress bar on stderr. */
  progress?: boolean;
}

interface Job {
  task: TaskDefinition;
  split: Split;
  record: TaskRecord;
  messages: ChatMessage[];
  key: string;
  ctx: PromptContext;
}

export interface SampleLog {
  task: string;
  split: string;
  id: string;
  messages: ChatMessage[];
  reply: string | null;
  status: 'parsed' | 'unparsed' | 'failed';
  answer: Prediction | null;
  notes?: string[];
  reason?: string;
  gold?: Prediction;
  correct?: boolean;
  latency_ms?: number;
}

export interface LlmRunResult {
  evaluation: EvaluationResult;
  summary: Record<string, unknown>;
  outDir: string;
  sent: number;
}

const sha256 = async (file: string): Promise<string> => (await sha256File(file)).sha256;

function percentile(values: number[], q: number): number | null {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((q / 100) * s.length))] as number;
}

/** A one-line progress bar on stderr, redrawn at most every 200 ms. */
class ProgressBar {
  done = 0;
  correct = 0;
  graded = 0;
  unparsed = 0;
  tokens = 0;
  private last = 0;
  private readonly start = Date.now();
  constructor(
    private readonly total: number,
    private readonly enabled: boolean,
  ) {}
  tick(force = false): void {
    if (!this.enabled) return;
    const now = Date.now();
    if (!force && now - this.last < 200) return;
    this.last = now;
    const rate = this.done / Math.max(1e-3, (now - this.start) / 1000);
    const eta = rate > 0 ? Math.round((this.total - this.done) / rate) : 0;
    const acc = this.graded > 0 ? `${((100 * this.correct) / this.graded).toFixed(1)}%` : '–';
    const width = 24;
    const filled = Math.round((width * this.done) / Math.max(1, this.total));
    process.stderr.write(
      `\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${this.done}/${this.total} acc ${acc} unparsed ${this.unparsed} tokens ${this.tokens} ETA ${eta}s   `,
    );
    if (force) process.stderr.write('\n');
  }
}

function isCorrect(task: TaskDefinition, gold: Prediction, answer: Prediction): boolean {
  if (task.kind === 'ranking') return (answer as string[])[0] === gold;
  return JSON.stringify(gold) === JSON.stringify(answer);
}

export async function runLlm(options: LlmRunOptions): Promise<LlmRunResult> {
  const log = options.logger ?? silentLogger;
  const seed = options.seed ?? 0;
  const shots = options.shots ?? 0;
  const mode = options.splits ?? 'test';
  const resuming = options.resume || options.retryErrors;
  const journalFile = join(options.outDir, 'journal.jsonl');
  if (existsSync(journalFile) && !resuming) {
    throw new UsageError(
      `${options.outDir} already holds a run; --resume continues it, --retry-errors re-asks its failures, or choose another --out`,
    );
  }
  mkdirSync(options.outDir, { recursive: true });
  const journal = new Journal(journalFile);
  const model = options.provider.describe();
  const keyParams = { model: model.model, ...options.params };

  // Build every job.
  const jobs: Job[] = [];
  const dataFiles: Record<string, string> = {};
  const skipped: Record<string, string> = {};
  // Labels a uniform guess would choose among, per task (open label spaces: the train inventory).
  const labelSpace: Record<string, number> = {};
  for (const t of options.tasks) if (t.kind === 'classification') labelSpace[t.name] = t.labels.length;
  for (const task of options.tasks) {
    const splits = (['test', 'private_test'] as const).filter(
      (s) => (mode === 'both' || mode === s) && (task.splits as readonly Split[]).includes(s),
    );
    if (splits.length === 0) {
      skipped[task.name] = `no ${mode === 'both' ? 'test or private_test' : mode} split`;
      continue;
    }
    const dataDir = options.dataDir;
    const trainFile = splitPath(dataDir, task, 'train');
    let ctx: PromptContext = {};
    if (task.kind === 'ranking') {
      const labels = await ifPresent(readGoldLabels(task, 'train', { dataDir }));
      if (labels) {
        ctx = { labels: [...labels].sort() };
        labelSpace[task.name] = labels.size;
        dataFiles[`${task.name}/train`] = await sha256(trainFile);
      }
    }
    let examples: TaskRecord[] = [];
    if (shots > 0) {
      const train = await ifPresent(loadSplit(task, 'train', { dataDir }));
      if (!train) {
        skipped[task.name] = `${shots}-shot prompts need ${trainFile}, which is missing`;
        log.warn(`${task.name}: ${skipped[task.name]}; skipped`);
        continue;
      }
      examples = drawExamples(task, train, shots, seed);
      dataFiles[`${task.name}/train`] = await sha256(trainFile);
    }
    for (const split of splits) {
      const records = await ifPresent(loadSplit(task, split, { dataDir }));
      if (!records) {
        log.warn(`${task.name}: ${splitPath(dataDir, task, split)} is missing; skipped`);
        continue;
      }
      dataFiles[`${task.name}/${split}`] = await sha256(splitPath(options.dataDir, task, split));
      for (const record of records.slice(0, options.limit ?? records.length)) {
        const messages = buildMessages(task, record, examples, {
          shots,
          seed,
          context: ctx,
          ...(options.system !== undefined ? { system: options.system } : {}),
          ...(options.templates?.[task.name]
            ? { template: options.templates[task.name] as PromptTemplate }
            : {}),
        });
        jobs.push({ task, split, record, messages, key: requestKey(messages, keyParams), ctx });
      }
    }
  }

  // Send what the journal does not answer yet.
  const pending = jobs.filter((j) => {
    const e = journal.get(j.key);
    return options.retryErrors ? e?.status === 'error' : e?.status !== 'ok';
  });
  log.info(
    `${jobs.length} requests in the run, ${jobs.length - pending.length} already answered, ${pending.length} to send`,
  );
  const bar = new ProgressBar(pending.length, options.progress ?? false);
  const started = Date.now();
  let next = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const job = pending[next++];
      if (!job) return;
      const t0 = performance.now();
      let entry: JournalEntry;
      try {
        const reply = await options.provider.chat(
          job.messages,
          options.params,
          job.task.prompt.jsonSchema ? { jsonSchema: job.task.prompt.jsonSchema } : {},
        );
        entry = {
          key: job.key,
          task: job.task.name,
          split: job.split,
          id: job.record.id,
          status: 'ok',
          reply: reply.text,
          ...(reply.usage ? { usage: reply.usage } : {}),
          ...(reply.finishReason ? { finishReason: reply.finishReason } : {}),
          latencyMs: performance.now() - t0,
          at: new Date().toISOString(),
        };
      } catch (e) {
        entry = {
          key: job.key,
          task: job.task.name,
          split: job.split,
          id: job.record.id,
          status: 'error',
          error: e instanceof Error ? e.message : String(e),
          latencyMs: performance.now() - t0,
          at: new Date().toISOString(),
        };
      }
      journal.append(entry);
      bar.done++;
      if (entry.status === 'ok') {
        bar.tokens += (entry.usage?.promptTokens ?? 0) + (entry.usage?.completionTokens ?? 0);
        const p = job.task.prompt.parse(entry.reply ?? '', job.record.raw, job.ctx);
        if (p.status === 'unparsed') bar.unparsed++;
        else if (job.record.gold !== undefined) {
          bar.graded++;
          if (isCorrect(job.task, job.record.gold, p.answer)) bar.correct++;
        }
      }
      bar.tick();
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 8) }, () => worker()));
  bar.tick(true);
  const wallS = (Date.now() - started) / 1000;

  // Assemble samples from the journal.
  const samples: SampleLog[] = jobs.map((job) => {
    const e = journal.get(job.key);
    const base = { task: job.task.name, split: job.split, id: job.record.id, messages: job.messages };
    const gold = job.record.gold;
    if (e?.status !== 'ok') {
      return {
        ...base,
        reply: null,
        status: 'failed',
        answer: null,
        reason: e?.error ?? 'not sent',
        ...(gold !== undefined ? { gold, correct: false } : {}),
      };
    }
    const p = job.task.prompt.parse(e.reply ?? '', job.record.raw, job.ctx);
    const answer = p.status === 'parsed' ? p.answer : null;
    return {
      ...base,
      reply: e.reply ?? '',
      status: p.status,
      answer,
      ...(p.status === 'parsed' ? { notes: p.notes } : { reason: p.reason }),
      ...(gold !== undefined ? { gold, correct: answer !== null && isCorrect(job.task, gold, answer) } : {}),
      latency_ms: e.latencyMs,
    };
  });
  writeFileSync(join(options.outDir, 'samples.jsonl'), toJsonl(samples));

  // Predictions (test, RuMedBench format) and the platform zip (private tests); no answer is written as null.
  const predictionsDir = join(options.outDir, 'predictions');
  rmSync(predictionsDir, { recursive: true, force: true });
  mkdirSync(predictionsDir, { recursive: true });
  const zipFiles: Record<string, Uint8Array> = {};
  for (const task of options.tasks) {
    const test = samples.filter((s) => s.task === task.name && s.split === 'test');
    if (test.length > 0) {
      writeFileSync(
        join(predictionsDir, `${task.name}.jsonl`),
        toJsonl(
          rumedbenchLines(
            task,
            test.map((s) => ({ id: s.id, gold: s.gold, prediction: s.answer })),
          ),
        ),
      );
    }
    const priv = samples.filter((s) => s.task === task.name && s.split === 'private_test');
    if (priv.length > 0) {
      zipFiles[`${task.name}.jsonl`] = strToU8(
        toJsonl(
          platformLines(
            task,
            priv.map((s) => ({ id: s.id, prediction: s.answer })),
          ),
        ),
      );
    }
  }
  if (Object.keys(zipFiles).length > 0)
    writeFileSync(join(options.outDir, 'submission.zip'), zipSync(zipFiles));

  const evaluation = await evaluateSubmission(predictionsDir, {
    dataDir: options.dataDir,
    seed,
    ...(options.bootstrap !== undefined ? { bootstrap: options.bootstrap } : {}),
    ...(options.limit !== undefined ? { fileGold: true } : {}),
  });

  const perTask: Record<
    string,
    { samples: number; unparsed: number; unparsed_rate: number; failed: number }
  > = {};
  for (const s of samples) {
    const t = perTask[s.task] ?? { samples: 0, unparsed: 0, unparsed_rate: 0, failed: 0 };
    perTask[s.task] = t;
    t.samples++;
    if (s.status === 'unparsed') t.unparsed++;
    if (s.status === 'failed') t.failed++;
  }
  for (const t of Object.values(perTask)) t.unparsed_rate = t.samples ? (100 * t.unparsed) / t.samples : 0;
  const ok = jobs.map((j) => journal.get(j.key)).filter((e): e is JournalEntry => e?.status === 'ok');
  const promptTokens = ok.reduce((n, e) => n + (e.usage?.promptTokens ?? 0), 0);
  const completionTokens = ok.reduce((n, e) => n + (e.usage?.completionTokens ?? 0), 0);
  const latencies = ok.map((e) => e.latencyMs);
  const summary = {
    ...evaluation,
    llm: {
      tasks: perTask,
      label_space: labelSpace,
      skipped,
      requests: {
        total: jobs.length,
        sent_this_run: pending.length,
        wall_s: wallS,
        throughput_rps: pending.length / Math.max(1e-9, wallS),
      },
      usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens },
      latency_ms: { median: percentile(latencies, 50), p95: percentile(latencies, 95) },
      ...(options.prices
        ? {
            cost: (promptTokens * options.prices.prompt + completionTokens * options.prices.completion) / 1e6,
          }
        : {}),
    },
  };
  for (const [name, t] of Object.entries(evaluation.tasks))
    Object.assign(t, { unparsed_rate: perTask[name]?.unparsed_rate ?? 0 });
  writeFileSync(join(options.outDir, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
  writeFileSync(
    join(options.outDir, 'manifest.json'),
    `${JSON.stringify(
      {
        schema_version: 1,
        rumedbench_version: VERSION,
        created: new Date().toISOString(),
        ...model,
        params: options.params,
        seed,
        shots,
        splits: mode,
        concurrency: options.concurrency ?? 8,
        limit: options.limit ?? null,
        system_override: options.system ?? null,
        templates: options.templates ?? null,
        prompt_versions: Object.fromEntries(options.tasks.map((t) => [t.name, t.prompt.version])),
        data_sha256: dataFiles,
      },
      null,
      2,
    )}\n`,
  );
  return { evaluation, summary, outDir: options.outDir, sent: pending.length };
}
