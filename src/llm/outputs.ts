/**
 * Stage three of an LLM run: every job's answer read from the journal (a reply parsed by the task's parser, or the
 * candidates' scores turned into an answer), then the run folder: samples.jsonl, predictions/ (RuMedBench format,
 * test sets), submission.zip (MedBench platform format, private tests), and the usage figures of the summary.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { toJsonl } from '../data/jsonl.js';
import { type Calibration, type CalibrationItem, calibration } from '../metrics/calibration.js';
import type { Prediction } from '../metrics/item-stats.js';
import { RunFolder } from '../scoring/formats.js';
import type { TaskDefinition } from '../tasks/types.js';
import type { Job } from './jobs.js';
import type { Journal, JournalEntry } from './journal.js';
import { chooseAnswer, type Normalization, normalized } from './loglik.js';
import type { ChatMessage } from './prompt.js';

export interface SampleLog {
  task: string;
  split: string;
  id: string;
  mode: 'generate' | 'loglik';
  /** Generation: the messages sent. */
  messages?: ChatMessage[];
  /** Log-likelihood: the prompt the candidates continue. */
  prompt?: string;
  reply: string | null;
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
}

export function isCorrect(task: TaskDefinition, gold: Prediction, answer: Prediction): boolean {
  if (task.kind === 'ranking') return (answer as string[])[0] === gold;
  return JSON.stringify(gold) === JSON.stringify(answer);
}

/** The answer of a finished job, and how it was read. */
export function readAnswer(
  job: Job,
  e: JournalEntry,
  by: Normalization = 'sum',
): { answer: Prediction | null; status: 'parsed' | 'unparsed'; notes?: string[]; reason?: string } {
  if (job.kind === 'loglik') {
    const answer = chooseAnswer(job.task, job.item.candidates, e.logprobs ?? [], by);
    return answer === null
      ? { answer, status: 'unparsed', reason: 'no candidate could be scored' }
      : { answer, status: 'parsed' };
  }
  const p = job.task.prompt.parse(e.reply ?? '', job.record.raw, job.ctx);
  return p.status === 'parsed'
    ? { answer: p.answer, status: 'parsed', notes: p.notes }
    : { answer: null, status: 'unparsed', reason: p.reason };
}

export function collectSamples(jobs: readonly Job[], journal: Journal): SampleLog[] {
  return jobs.map((job): SampleLog => {
    const e = journal.get(job.key);
    const gold = job.record.gold as Prediction | undefined;
    const base = {
      task: job.task.name,
      split: job.split,
      id: job.record.id,
      mode: job.kind === 'chat' ? ('generate' as const) : ('loglik' as const),
      ...(job.kind === 'chat' ? { messages: job.messages } : { prompt: job.item.context }),
    };
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
    const r = readAnswer(job, e);
    const loglik =
      job.kind === 'loglik'
        ? {
            candidates: job.item.candidates.map((c, i) => ({
              ...c,
              logprob: e.logprobs?.[i] ?? null,
              tokens: e.tokens?.[i] ?? 0,
            })),
            answer_norm: { char: readAnswer(job, e, 'char').answer, byte: readAnswer(job, e, 'byte').answer },
          }
        : {};
    return {
      ...base,
      reply: job.kind === 'chat' ? (e.reply ?? '') : null,
      status: r.status,
      answer: r.answer,
      ...loglik,
      ...(r.status === 'parsed' ? { notes: r.notes ?? [] } : { reason: r.reason ?? 'unparsed' }),
      ...(gold !== undefined
        ? { gold, correct: r.answer !== null && isCorrect(job.task, gold, r.answer) }
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
): string {
  writeFileSync(join(outDir, 'samples.jsonl'), toJsonl(samples));
  const folder = new RunFolder(outDir);
  for (const task of tasks) {
    const test = samples.filter((s) => s.task === task.name && s.split === 'test');
    if (test.length > 0)
      folder.writeTest(
        task,
        test.map((s) => ({ id: s.id, gold: s.gold, prediction: s.answer })),
      );
    const priv = samples.filter((s) => s.task === task.name && s.split === 'private_test');
    if (priv.length > 0)
      folder.addPrivate(
        task,
        priv.map((s) => ({ id: s.id, prediction: s.answer })),
      );
  }
  folder.finish();
  return folder.predictionsDir;
}

export interface TaskFigures {
  mode: 'generate' | 'loglik';
  samples: number;
  unparsed: number;
  unparsed_rate: number;
  failed: number;
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
}

/** Calibration of a task's log-likelihood answers, under a normalization of the candidates' scores. */
function taskCalibration(
  graded: readonly SampleLog[],
  by: 'sum' | 'char',
): (Calibration & { left_out: number }) | undefined {
  const items: CalibrationItem[] = [];
  for (const s of graded) {
    const c = s.candidates ?? [];
    const gold = c.findIndex((x) => x.label === s.gold);
    if (gold < 0 || c.some((x) => x.logprob === null)) continue;
    items.push({ logits: c.map((x) => normalized(x.logprob as number, x.text, by)), gold });
  }
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
