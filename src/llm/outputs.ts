/**
 * Stage three of an LLM run: every request's answer read from the journal (a reply parsed by the task's parser, or the
 * candidates' scores turned into an answer), then the run folder: samples.jsonl, predictions/ (RuMedBench format,
 * test sets), submission.zip (MedBench platform format, private tests), and the usage figures of the summary.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { toJsonl } from '../data/jsonl.js';
import { type Calibration, type CalibrationItem, calibration } from '../metrics/calibration.js';
import type { Prediction } from '../metrics/item-stats.js';
import { percentileOf } from '../metrics/quantile.js';
import { createRng } from '../metrics/rng.js';
import { RunFolderWriter } from '../scoring/formats.js';
import { say } from '../tasks/reasons.js';
import { REPLY_FLAGS, type ReplyFlag, readReply, splitReply } from '../tasks/reply-check.js';
import type { TaskDefinition } from '../tasks/types.js';
import type { Journal, JournalEntry } from './journal.js';
import { chooseAnswer, type Normalization, normalized } from './loglik.js';
import type { ChatMessage } from './prompt.js';
import type { Usage } from './provider.js';
import type { LlmRequest } from './requests.js';

export interface SampleLog {
  task: string;
  split: string;
  id: string;
  mode: 'generate' | 'loglik';
  /** Generation: the messages sent. */
  messages?: ChatMessage[];
  /** Log-likelihood: the prompt the candidates continue. */
  prompt?: string;
  /** Generation: the reply's answer text, its reasoning apart (`reasoning`). */
  reply: string | null;
  /** Generation: the model's reasoning, from the server's reasoning field or `<think>` blocks of the reply. */
  reasoning?: string;
  /** Generation: the request's tokens as the server counted them (reasoning and cached prompt tokens where it says). */
  usage?: SampleUsage;
  /** Generation: why the server says the reply ended (stop, length, content_filter), where it says. */
  finish_reason?: string;
  /** Generation: a reply not read as the model's answer, or cut off (src/tasks/reply-check.ts). */
  flag?: ReplyFlag;
  status: 'parsed' | 'unparsed' | 'failed';
  answer: Prediction | null;
  /** Log-likelihood: every candidate with its score (null: unscored) and token count. */
  candidates?: { label: string; text: string; logprob: number | null; tokens: number }[];
  /** Log-likelihood: the answers under length normalization, per character and per UTF-8 byte. */
  answer_norm?: { char: Prediction | null; byte: Prediction | null };
  notes?: string[];
  reason?: string;
  gold?: Prediction;
  correct?: boolean;
  latency_ms?: number;
  /** `--repeats`: which asking of the item this is (from 0). */
  repeat?: number;
  /** `--repeats`, the item's voted sample: every repeat's answer (null: unread) and the share that gave the vote. */
  repeats?: { answers: (Prediction | null)[]; agreement: number };
}

export type SampleUsage = {
  prompt_tokens: number;
  completion_tokens: number;
  /** Of the completion tokens, those spent reasoning; absent where the server does not say. */
  reasoning_tokens?: number;
  /** Of the prompt tokens, those read from the server's prompt cache; absent where the server does not say. */
  cached_prompt_tokens?: number;
  /** Of the prompt tokens, those written to the server's prompt cache (Anthropic); absent where it does not say. */
  cache_write_tokens?: number;
};

/** A journal entry's token counts as a sample records them. */
export function sampleUsage(u: Usage): SampleUsage {
  return {
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    ...(u.reasoningTokens !== undefined ? { reasoning_tokens: u.reasoningTokens } : {}),
    ...(u.cachedPromptTokens !== undefined ? { cached_prompt_tokens: u.cachedPromptTokens } : {}),
    ...(u.cacheWriteTokens !== undefined ? { cache_write_tokens: u.cacheWriteTokens } : {}),
  };
}

/** Token counts summed: reasoning, cached and cache-written prompt tokens only where at least one reply reported them. */
export type TokenSums = SampleUsage;

function addUsage(into: TokenSums, u: Usage): void {
  into.prompt_tokens += u.promptTokens;
  into.completion_tokens += u.completionTokens;
  if (u.reasoningTokens !== undefined)
    into.reasoning_tokens = (into.reasoning_tokens ?? 0) + u.reasoningTokens;
  if (u.cachedPromptTokens !== undefined)
    into.cached_prompt_tokens = (into.cached_prompt_tokens ?? 0) + u.cachedPromptTokens;
  if (u.cacheWriteTokens !== undefined)
    into.cache_write_tokens = (into.cache_write_tokens ?? 0) + u.cacheWriteTokens;
}

/**
 * The run's token ledger: what the server counted, summed over the answered requests, for the run and per task.
 * Counts a server did not give are absent, not guessed (a sum of reasoning tokens over the replies that reported
 * them would look like a whole).
 */
export function usageLedger(
  entries: readonly JournalEntry[],
): TokenSums & { tasks: Record<string, TokenSums> } {
  const run: TokenSums = { prompt_tokens: 0, completion_tokens: 0 };
  const tasks: Record<string, TokenSums> = {};
  for (const e of entries) {
    if (e.status !== 'ok' || !e.usage) continue;
    addUsage(run, e.usage);
    tasks[e.task] ??= { prompt_tokens: 0, completion_tokens: 0 };
    addUsage(tasks[e.task] as TokenSums, e.usage);
  }
  return { ...run, tasks };
}

export function isCorrect(task: TaskDefinition, gold: Prediction, answer: Prediction): boolean {
  if (task.kind === 'ranking') return (answer as string[])[0] === gold;
  return JSON.stringify(gold) === JSON.stringify(answer);
}

/** The answer of a finished request, and how it was read. */
export function readAnswer(
  request: LlmRequest,
  e: JournalEntry,
  by: Normalization = 'sum',
): {
  answer: Prediction | null;
  status: 'parsed' | 'unparsed';
  notes?: string[];
  reason?: string;
  flag?: ReplyFlag;
} {
  // Shuffled options: the label the model chose, read back as the option's original label.
  const back = (a: Prediction | null): Prediction | null =>
    request.answerMap && typeof a === 'string' ? (request.answerMap[a] ?? a) : a;
  if (request.kind === 'loglik') {
    const answer = back(chooseAnswer(request.task, request.item.candidates, e.logprobs ?? [], by));
    return answer === null
      ? { answer, status: 'unparsed', reason: say('NO_CANDIDATE') }
      : { answer, status: 'parsed' };
  }
  const r = readReply(
    request.task,
    {
      text: e.reply ?? '',
      ...(e.reasoning !== undefined ? { reasoning: e.reasoning } : {}),
      ...(e.finishReason !== undefined ? { finishReason: e.finishReason } : {}),
    },
    { messages: request.messages, raw: (request.shown ?? request.record).raw, ctx: request.ctx },
  );
  return r.status === 'parsed' ? { ...r, answer: back(r.answer) } : r;
}

export function collectSamples(requests: readonly LlmRequest[], journal: Journal): SampleLog[] {
  return requests.map((request): SampleLog => {
    const e = journal.get(request.key);
    const gold = request.record.gold as Prediction | undefined;
    const base = {
      task: request.task.name,
      split: request.split,
      id: request.record.id,
      ...(request.repeat !== undefined ? { repeat: request.repeat } : {}),
      mode: request.kind === 'chat' ? ('generate' as const) : ('loglik' as const),
      ...(request.kind === 'chat' ? { messages: request.messages } : { prompt: request.item.context }),
    };
    if (e?.status !== 'ok') {
      return {
        ...base,
        reply: null,
        status: 'failed',
        answer: null,
        reason: e?.error ?? say('NOT_SENT'),
        ...(gold !== undefined ? { gold, correct: false } : {}),
      };
    }
    const r = readAnswer(request, e);
    const loglik =
      request.kind === 'loglik'
        ? {
            candidates: request.item.candidates.map((c, i) => ({
              ...c,
              logprob: e.logprobs?.[i] ?? null,
              tokens: e.tokens?.[i] ?? 0,
            })),
            answer_norm: {
              char: readAnswer(request, e, 'char').answer,
              byte: readAnswer(request, e, 'byte').answer,
            },
          }
        : {};
    const split = request.kind === 'chat' ? splitReply(e.reply ?? '', e.reasoning) : undefined;
    return {
      ...base,
      reply: split ? split.answer : null,
      ...(split?.reasoning !== undefined ? { reasoning: split.reasoning } : {}),
      ...(e.usage ? { usage: sampleUsage(e.usage) } : {}),
      ...(request.kind === 'chat' && e.finishReason !== undefined ? { finish_reason: e.finishReason } : {}),
      ...(r.flag ? { flag: r.flag } : {}),
      status: r.status,
      answer: r.answer,
      ...loglik,
      ...(r.status === 'parsed' ? { notes: r.notes ?? [] } : { reason: r.reason ?? say('UNPARSED') }),
      ...(gold !== undefined
        ? { gold, correct: r.answer !== null && isCorrect(request.task, gold, r.answer) }
        : {}),
      latency_ms: e.latencyMs,
    };
  });
}

/** predictions/<Task>.jsonl for the test sets, submission.zip for the private tests; no answer is written as null. */
export function writePredictions(
  outDir: string,
  tasks: readonly TaskDefinition[],
  samples: readonly SampleLog[],
  /** One sample per item (with `--repeats`, the voted ones); `samples` themselves by default. */
  answered: readonly SampleLog[] = samples,
): string {
  writeFileSync(join(outDir, 'samples.jsonl'), toJsonl(samples));
  const folder = new RunFolderWriter(outDir);
  for (const task of tasks) {
    const test = answered.filter((s) => s.task === task.name && s.split === 'test');
    if (test.length > 0)
      folder.writeTest(
        task,
        test.map((s) => ({ id: s.id, gold: s.gold, prediction: s.answer })),
      );
    const priv = answered.filter((s) => s.task === task.name && s.split === 'private_test');
    if (priv.length > 0)
      folder.addPrivate(
        task,
        priv.map((s) => ({ id: s.id, prediction: s.answer })),
      );
  }
  folder.finish();
  return folder.predictionsDir;
}

export type TaskFigures = {
  mode: 'generate' | 'loglik';
  samples: number;
  unparsed: number;
  unparsed_rate: number;
  failed: number;
  /** Generation: replies flagged before parsing (src/tasks/reply-check.ts), by flag; a truncated reply may still be read. */
  replies?: Record<ReplyFlag, number>;
  /** Log-likelihood, items with gold: accuracy of the argmax of the sum, and of the length-normalized scores. */
  acc?: number;
  acc_norm_char?: number;
  acc_norm_byte?: number;
  /**
   * Log-likelihood, items with gold: how the softmax of the candidates' scores matches being right (calibration.ts),
   * from the sums and from the sums per character; items with an unscored candidate are left out, and counted.
   */
  calibration?: Calibration & { left_out: number };
  calibration_norm_char?: Calibration & { left_out: number };
};

/**
 * A log-likelihood sample as calibration reads it: its candidates' scores (under a normalization) and the gold's
 * index; undefined where the gold is not a candidate or a candidate went unscored.
 */
export function calibrationItem(s: SampleLog, by: 'sum' | 'char' = 'sum'): CalibrationItem | undefined {
  const c = s.candidates ?? [];
  const gold = c.findIndex((x) => x.label === s.gold);
  if (gold < 0 || c.some((x) => x.logprob === null)) return undefined;
  return { logits: c.map((x) => normalized(x.logprob as number, x.text, by)), gold };
}

/** Calibration of a task's log-likelihood answers, under a normalization of the candidates' scores. */
function taskCalibration(
  graded: readonly SampleLog[],
  by: 'sum' | 'char',
): (Calibration & { left_out: number }) | undefined {
  const items = graded
    .map((s) => calibrationItem(s, by))
    .filter((x): x is CalibrationItem => x !== undefined);
  if (items.length === 0) return undefined;
  return { ...calibration(items), left_out: graded.length - items.length };
}

/** Per task: samples, unparsed and failed counts; for log-likelihood tasks the three accuracies (percent). */
export function taskFigures(
  tasks: readonly TaskDefinition[],
  samples: readonly SampleLog[],
): Record<string, TaskFigures> {
  const out: Record<string, TaskFigures> = {};
  for (const task of tasks) {
    const mine = samples.filter((s) => s.task === task.name);
    if (mine.length === 0) continue;
    const unparsed = mine.filter((s) => s.status === 'unparsed').length;
    const f: TaskFigures = {
      mode: mine[0]?.mode ?? 'generate',
      samples: mine.length,
      unparsed,
      unparsed_rate: (100 * unparsed) / mine.length,
      failed: mine.filter((s) => s.status === 'failed').length,
    };
    if (f.mode === 'generate')
      f.replies = Object.fromEntries(
        REPLY_FLAGS.map((flag) => [flag, mine.filter((s) => s.flag === flag).length]),
      ) as Record<ReplyFlag, number>;
    const graded = mine.filter((s) => s.gold !== undefined && s.mode === 'loglik');
    if (graded.length > 0) {
      const acc = (pick: (s: SampleLog) => Prediction | null | undefined) =>
        (100 *
          graded.filter((s) => {
            const a = pick(s);
            return a !== null && a !== undefined && isCorrect(task, s.gold as Prediction, a);
          }).length) /
        graded.length;
      f.acc = acc((s) => s.answer);
      f.acc_norm_char = acc((s) => s.answer_norm?.char);
      f.acc_norm_byte = acc((s) => s.answer_norm?.byte);
      const cal = taskCalibration(graded, 'sum');
      const calChar = taskCalibration(graded, 'char');
      if (cal) f.calibration = cal;
      if (calChar) f.calibration_norm_char = calChar;
    }
    out[task.name] = f;
  }
  return out;
}

const keyOf = (a: Prediction | null) => JSON.stringify(a);

/** The repeats of each item, grouped in the order the items first appear. */
function byItem(samples: readonly SampleLog[]): SampleLog[][] {
  const groups = new Map<string, SampleLog[]>();
  for (const s of samples) {
    const k = `${s.task}\u0000${s.split}\u0000${s.id}`;
    groups.set(k, [...(groups.get(k) ?? []), s]);
  }
  return [...groups.values()];
}

/**
 * `--repeats`: one sample per item, answering what most repeats answered (a tie goes to the answer given first);
 * an item no repeat answered readably stays unparsed (or failed, when every repeat failed).
 */
export function voteRepeats(tasks: readonly TaskDefinition[], samples: readonly SampleLog[]): SampleLog[] {
  const taskOf = new Map(tasks.map((t) => [t.name, t]));
  return byItem(samples).map((group) => {
    const first = group[0] as SampleLog;
    const answers = group.map((s) => (s.status === 'parsed' ? s.answer : null));
    const counts = new Map<string, number>();
    for (const a of answers) if (a !== null) counts.set(keyOf(a), (counts.get(keyOf(a)) ?? 0) + 1);
    let best: Prediction | null = null;
    let bestCount = 0;
    for (const a of answers)
      if (a !== null && (counts.get(keyOf(a)) as number) > bestCount) {
        best = a;
        bestCount = counts.get(keyOf(a)) as number;
      }
    const repeats = { answers, agreement: bestCount / group.length };
    if (best === null)
      return {
        ...first,
        repeats,
        ...(group.every((s) => s.status === 'failed') ? {} : { status: 'unparsed' as const }),
      };
    const winner = group.find((s) => s.status === 'parsed' && keyOf(s.answer) === keyOf(best)) as SampleLog;
    const task = taskOf.get(first.task) as TaskDefinition;
    return {
      ...winner,
      repeats,
      ...(winner.gold !== undefined ? { correct: isCorrect(task, winner.gold, best) } : {}),
    };
  });
}

export type RepeatFigures = {
  k: number;
  /** Items with gold: the mean over repeats of the accuracy (an unread or failed answer is wrong), percent. */
  mean_accuracy: number | null;
  /** Its 95% percentile bootstrap interval over items. */
  mean_accuracy_ci: [number, number] | null;
  /** Items whose repeats all gave the same answer (unread counts as an answer of its own), percent. */
  consistency: number;
  flipped: number;
  /** The first items whose answer flips between repeats. */
  flipped_ids: string[];
};

/** `--repeats`: per task, the mean accuracy across repeats with its interval, and how often answers flip. */
export function repeatFigures(
  tasks: readonly TaskDefinition[],
  samples: readonly SampleLog[],
  seed: number,
  resamples = 1000,
): Record<string, RepeatFigures> {
  const out: Record<string, RepeatFigures> = {};
  for (const task of tasks) {
    const groups = byItem(samples.filter((s) => s.task === task.name));
    if (groups.length === 0) continue;
    const k = Math.max(...groups.map((g) => g.length));
    const flippedIds = groups
      .filter((g) => new Set(g.map((s) => keyOf(s.status === 'parsed' ? s.answer : null))).size > 1)
      .map((g) => (g[0] as SampleLog).id);
    const shares = groups
      .filter((g) => g[0]?.gold !== undefined)
      .map((g) => g.filter((s) => s.correct === true).length / g.length);
    let mean: number | null = null;
    let ci: [number, number] | null = null;
    if (shares.length > 0) {
      mean = (100 * shares.reduce((a, b) => a + b, 0)) / shares.length;
      const rng = createRng(seed);
      const means: number[] = [];
      for (let b = 0; b < resamples; b++) {
        let sum = 0;
        for (let i = 0; i < shares.length; i++) sum += shares[rng.int(shares.length)] as number;
        means.push((100 * sum) / shares.length);
      }
      ci = [percentileOf(means, 2.5) as number, percentileOf(means, 97.5) as number];
    }
    out[task.name] = {
      k,
      mean_accuracy: mean,
      mean_accuracy_ci: ci,
      consistency: (100 * (groups.length - flippedIds.length)) / groups.length,
      flipped: flippedIds.length,
      flipped_ids: flippedIds.slice(0, 20),
    };
  }
  return out;
}
