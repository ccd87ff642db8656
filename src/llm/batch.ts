/**
 * Batch runs (`llm --batch`): the requests sent as a provider's batch (OpenAI's Batch API: half price, results within
 * 24 hours) instead of one by one. Each request's `custom_id` is its journal key, so a batch's results land in the
 * same journal an online run writes, and the run folder is written from it alike: predictions from a batch equal an
 * online run's that got the same answers.
 *
 * The batch's id is written to `batches.jsonl` in the run folder the moment the provider returns it, before any
 * waiting: a run killed while it waits (SIGKILL included) is continued by `--resume`, which collects the batches
 * recorded there and never submits their requests again. Requests that fail inside a batch are journaled as failed
 * requests; `--resume --retry-errors` sends them, and only them, as a new batch.
 *
 * At most one batch per set of requests, through any kill or timeout of the creating call: the intent to create
 * (a fresh tag and the requests' keys) is recorded before the call, the batch carries the tag where the provider keeps
 * one (OpenAI's `metadata`), and the call is made once. When its answer never comes (a timeout, a dropped
 * connection, a killed run), the batch is looked up at the provider (its list of batches, matched by tag; for
 * Anthropic, which keeps no tag, by the number of requests among the batches created since the intent) before another
 * is created.
 */
import { createHash, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import {
  appendFileSync,
  createReadStream,
  createWriteStream,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  type WriteStream,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import { readUtf8LineBatches } from '../data/text.js';
import { RumedbenchError, UsageError } from '../errors.js';
import { type Logger, redactSecrets } from '../log.js';
import { estimatedUsage } from './cost.js';
import { cutTornTail, type JournalEntry, salvageGlued } from './journal.js';
import type { ChatMessage } from './prompt.js';
import type { ChatReply, SamplingParams } from './provider.js';
import type { LlmRequest } from './requests.js';

/**
 * A batch's defaults: the first wait between two looks at it (seconds; doubled up to five minutes), the share of the
 * list prices it saves (OpenAI's and Anthropic's batch discount), and how long it is waited for, hours after it was
 * submitted (both providers' completion window is 24 h; an hour's margin).
 */
export const BATCH_DEFAULTS = { pollS: 10, discount: 0.5, deadlineH: 25 } as const;

/** Where a batch stands, as its provider says. */
export interface BatchState {
  id: string;
  /** The provider's word (validating, in_progress, finalizing, completed, failed, expired, cancelled…). */
  status: string;
  /** No more results will come. */
  ended: boolean;
  counts?: { total: number; completed: number; failed: number };
  /** Where its results are (the provider's file ids or URLs). */
  files?: readonly string[];
  /** Why the whole batch failed, where it did (a file the provider refused). */
  failure?: string;
  /** The status is a word the provider's API does not document: `ended` was decided from the request counts. */
  unknownWord?: true;
}

/**
 * Whether a batch whose status word is unknown has ended, by its request counts: every request completed or failed,
 * and a results file named (`files`, where the provider names its results by file). A word no provider documents (`paused`) is otherwise waited on to --batch-deadline.
 */
export const doneByCounts = (counts: BatchState['counts'], files?: readonly string[]): boolean =>
  counts !== undefined &&
  counts.total > 0 &&
  counts.completed + counts.failed >= counts.total &&
  (files === undefined || files.length > 0);

/** One request's outcome in a batch's results: its reply, or why it failed. */
export type BatchResult = { key: string; reply: ChatReply } | { key: string; error: string };

/** How far before an intent a batch's creation time may read when it is looked up (the two clocks' difference). */
export const CLOCK_MARGIN_S = 600;
/** Pages of 100 batches read at most when a batch is looked up at its provider. */
export const MAX_LIST_PAGES = 50;

/** What a provider's batch API must do; a provider without one has no `batches`. */
export interface BatchApi {
  readonly name: string;
  /** The most requests and bytes one batch may hold. */
  readonly limits: { requests: number; bytes: number };
  /** One request as a line of the batch's input. */
  line(key: string, messages: readonly ChatMessage[], params: SamplingParams): string;
  /** How the lines are put together in the file sent: OpenAI's JSONL, or Anthropic's one JSON body. */
  readonly frame: { head: string; sep: string; tail: string };
  /**
   * Creates the batch written in `file` (framed lines), tagged with `tag` where the provider keeps a tag, in one call
   * that is never retried here: a creating call whose answer did not come is followed by {@link BatchApi.find}.
   */
  submit(file: string, tag: string): Promise<{ id: string; inputFileId?: string }>;
  /**
   * The batches an intent created at the provider, oldest first: by its tag (OpenAI's metadata, or in this process
   * the input file uploaded for it), or for a provider that keeps no tag, the one batch of as many requests created
   * since the intent that `known` does not hold. Several untagged candidates are refused (BATCH_AMBIGUOUS): which one
   * is ours cannot be told, and guessing could collect another run's. A list that cannot be read to its end throws.
   */
  find(intent: BatchIntent, known: ReadonlySet<string>): Promise<string[]>;
  /** Whether `find` matches by a tag the batch carries (several found are then all this intent's). */
  readonly tagged: boolean;
  /** Cancels a batch (a second one made for the same requests). */
  cancel(id: string): Promise<void>;
  /**
   * How long after a creating call went unanswered its batch may still appear at the provider (the call may still be
   * under way behind a gateway that gave up): twice the request timeout. Looked for that long before another is made.
   */
  readonly settleMs: number;
  state(id: string): Promise<BatchState>;
  /**
   * The results of an ended batch, as they are read: the provider's files saved into `dir` as they arrive, then read
   * line by line (never whole in memory). `keys` are the requests the batch holds by our own record: the results are
   * capped at that many replies (each at its share: {@link resultsCap}, from `maxTokens`, the most its requests ask
   * for), never by the provider's claim.
   */
  results(
    state: BatchState,
    dir: string,
    keys: readonly string[],
    maxTokens?: number,
  ): AsyncIterable<BatchResult>;
}

/**
 * The most bytes a batch's results may take, for the requests the batch holds by our record (a provider's count of
 * its requests is not trusted: with none, 45 honest replies failed a whole file; with 10¹² a gzip bomb filled the
 * disk). Each request's share scales with what it asked for: its result line (8 KiB of ids, status, usage) and
 * {@link RESULT_BYTES_PER_TOKEN} for each of the `--max-tokens` its reply may have, never more than the reply cap
 * (`--max-reply-bytes`) and its line's slack. At the defaults (1,024 tokens) that is 72 KiB a request: the 3,608
 * requests of the public test sets may take 266 MB, where one reply's 4 MiB cap each allowed 15 GB (#59 item 6).
 * `--max-reply-bytes` raised above its default is the user's own share per request, taken whole.
 */
export function resultsCap(
  replyCap: number,
  requests: number,
  asked: { maxTokens?: number | undefined; capRaised?: boolean } = {},
): { bytes: number; says: string } {
  const n = Math.max(1, requests);
  const whole = replyCap + LINE_SLACK;
  const { maxTokens } = asked;
  if (maxTokens === undefined || asked.capRaised) {
    return {
      bytes: n * whole,
      says: `the batch's ${requests} requests can take (${requests} × (--max-reply-bytes ${replyCap} + ${LINE_SLACK} for the line around a reply)): continue with --resume, which collects the batch again, after raising --max-reply-bytes if the replies are that long`,
    };
  }
  const share = Math.min(whole, RESULT_LINE_BYTES + maxTokens * RESULT_BYTES_PER_TOKEN);
  return {
    bytes: n * share,
    says: `the batch's ${requests} requests can take (${requests} × ${share}: ${RESULT_LINE_BYTES} for a result line and ${RESULT_BYTES_PER_TOKEN} for each of the --max-tokens ${maxTokens} a reply may have, at most --max-reply-bytes ${replyCap} and ${LINE_SLACK}), so the replies are longer than --max-tokens allows: continue with --resume and a --max-reply-bytes above its default (4 MiB), which is then each request's share, to collect the batch anyway`,
  };
}

/** The bytes of one batch result line around its reply text (ids, status, usage, the body's other fields), at most. */
const RESULT_LINE_BYTES = 8 << 10;
/**
 * The bytes one token of a reply may take in a results line: a Russian word's token of 10 letters JSON-escaped
 * (`\u0430`, 6 bytes each) is 60; a token of a run of dots or spaces (a model repeating itself) a few dozen.
 */
const RESULT_BYTES_PER_TOKEN = 64;

/**
 * How long a batch's results may take to download: `--timeout-ms` (one request's deadline), and a fifth of a second
 * more per request the batch holds by our record (10 KB/s for honest 2 KB lines). A results file of 20,000 lines is
 * no reply to be had within one request's timeout; held to it, it could never be collected (#59 item 7).
 */
export const downloadDeadlineMs = (timeoutMs: number, requests: number): number =>
  timeoutMs + Math.max(1, requests) * DOWNLOAD_MS_PER_REQUEST;
const DOWNLOAD_MS_PER_REQUEST = 200;

/** A results line longer than this many bytes past the reply cap is no reply: passed over, its request failed. */
const LINE_SLACK = 64 << 10;

/**
 * The lines of a batch's results file that name their request (`custom_id`), parsed as they stream from the file.
 * Any other line (not JSON, no id, longer than `maxLine`) is passed over: its request, left unanswered, is failed by
 * {@link runBatches}, named.
 */
export async function* resultLines<L extends { custom_id?: unknown }>(
  file: string,
  maxLine: number,
): AsyncGenerator<{ key: string; line: L }> {
  for await (const batch of readUtf8LineBatches(file, { skipLongerThan: maxLine + LINE_SLACK })) {
    for (const raw of batch) {
      if (raw.trim() === '') continue;
      let line: L;
      try {
        line = JSON.parse(raw) as L;
      } catch {
        continue;
      }
      if (typeof line?.custom_id === 'string') yield { key: line.custom_id, line };
    }
  }
}

/** Downloads of a batch's results at most, in one command, while they fail their check (a cut or lying file). */
const RESULT_TRIES = 3;

/** Whether a line of a results file is a result (an outcome for a request it names), never an input line echoed. */
function resultFor(text: string, keys: ReadonlySet<string>): string | undefined {
  try {
    const line = JSON.parse(text) as {
      custom_id?: unknown;
      response?: unknown;
      error?: unknown;
      result?: unknown;
    } | null;
    const key = line?.custom_id;
    const outcome = (line?.response ?? line?.error ?? line?.result) != null;
    return typeof key === 'string' && keys.has(key) && outcome ? key : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The requests of the batch (`keys`) a results file answers, each counted once: lines that name another request, a
 * request already answered, or none (not JSON, not a result) answer nothing, so a file of such lines cannot pass for
 * the provider's count of requests done. A line too long to read counts as an answer (its request fails, named: a
 * reply over the cap), and so does the last line where the file does not end with a newline, if it is a whole result;
 * otherwise that line is returned as `tail`, cut off.
 */
async function countAnswers(
  file: string,
  maxLine: number,
  keys: ReadonlySet<string>,
  seen: Set<string>,
): Promise<{ answers: number; tail: string | undefined }> {
  let answers = 0;
  let current = 0;
  let line: Buffer[] = [];
  let lineBytes = 0;
  const count = (text: string): boolean => {
    const key = resultFor(text, keys);
    if (key === undefined || seen.has(key)) return false;
    seen.add(key);
    answers++;
    return true;
  };
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    let from = 0;
    for (;;) {
      const nl = chunk.indexOf(10, from);
      const piece = chunk.subarray(from, nl < 0 ? chunk.length : nl);
      current += piece.length;
      if (lineBytes + piece.length <= maxLine) {
        line.push(piece);
        lineBytes += piece.length;
      }
      if (nl < 0) break;
      if (current > maxLine) answers++;
      else if (current > 0) count(Buffer.concat(line).toString('utf8'));
      current = 0;
      line = [];
      lineBytes = 0;
      from = nl + 1;
    }
  }
  if (current === 0) return { answers, tail: undefined };
  const tail = Buffer.concat(line).toString('utf8');
  // A whole result without its newline is read; its request may have been answered above (a duplicate), and is whole.
  const whole = current <= maxLine && resultFor(tail, keys) !== undefined;
  if (whole) count(tail);
  return { answers, tail: whole ? undefined : tail };
}

/**
 * What is wrong with a batch's downloaded results files, checked end to end before any line is taken as an answer:
 * a last line cut off (no final newline, not a whole result: a body cut short, a gzip stream cut half-way), or fewer
 * of the batch's requests answered than the provider counts done (a file cut at a line's end, a results file it does
 * not name, lines of other requests or none). The provider's counts are used only where they are possible (no more
 * than the requests the batch holds by our record, `keys`).
 */
export async function resultsProblem(
  files: readonly string[],
  state: BatchState,
  keys: readonly string[],
  maxLine: number,
): Promise<string | undefined> {
  const ours = new Set(keys);
  const seen = new Set<string>();
  let answers = 0;
  for (const file of files) {
    const counted = await countAnswers(file, maxLine + LINE_SLACK, ours, seen);
    answers += counted.answers;
    if (counted.tail !== undefined)
      return `its results file ends in the middle of a line (cut short after ${answers} answer(s))`;
  }
  const c = state.counts;
  const done = c ? c.completed + c.failed : 0;
  if (c && done <= keys.length && answers < done)
    return `its results answer ${answers} of its request(s) where the provider counts ${done} done (${c.completed} completed, ${c.failed} failed): a results file is cut short, not named, or holds lines of other requests`;
  return undefined;
}

/**
 * A batch's results, downloaded (`download` saves the provider's files and returns their paths) and checked by
 * {@link resultsProblem} before any line is read (`read`); a file that fails the check is downloaded again, up to
 * {@link RESULT_TRIES} times, then the batch is left uncollected (thrown): its requests are never paid again, and
 * `--resume` downloads them once more. The files are removed once read.
 */
export async function* checkedResults(o: {
  state: BatchState;
  /** The keys of the requests the batch holds by our record. */
  keys: readonly string[];
  maxLine: number;
  download: () => Promise<string[]>;
  read: (file: string) => AsyncIterable<BatchResult>;
  sleep?: (ms: number) => Promise<void>;
}): AsyncGenerator<BatchResult> {
  for (let attempt = 1; ; attempt++) {
    let files: string[] = [];
    try {
      files = await o.download();
      const problem = await resultsProblem(files, o.state, o.keys, o.maxLine);
      if (problem !== undefined) {
        if (attempt >= RESULT_TRIES) throw new Error(`${problem}; downloaded ${attempt} times`);
        await (o.sleep ?? sleep)(1000 * attempt);
        continue;
      }
      for (const f of files) yield* o.read(f);
      return;
    } finally {
      for (const f of files) rmSync(f, { force: true });
    }
  }
}

/** A submitted batch as its ledger records it: its requests' keys, and whether its results were collected. */
export interface RecordedBatch {
  id: string;
  provider: string;
  keys: string[];
  collected: boolean;
  /** When it was submitted (ISO), where the ledger says: its deadline counts from then. */
  at?: string;
  /** Its intent's tag, where it was made under one (a second batch of the same tag is cancelled when it is found). */
  tag?: string;
}

/** A batch about to be created: recorded before the creating call, so that an answer that never came is looked up. */
export interface BatchIntent {
  tag: string;
  provider: string;
  keys: string[];
  /** When it was recorded (ISO): a batch created for it is not older (with a margin for the provider's clock). */
  at: string;
}

/**
 * Where a run records its batches the moment they are submitted, and when their results were collected: a run
 * folder's `batches.jsonl` (`llm --batch`, `plan run`), or the queue's database (workers).
 */
export interface BatchLedger {
  read(): Promise<RecordedBatch[]>;
  /** The intents whose creating call's outcome is not recorded (neither submitted nor abandoned). */
  intents(): Promise<BatchIntent[]>;
  creating(i: BatchIntent): Promise<void>;
  /** An intent the provider never acted on (looked up, not found): its requests are sent again under a new one. */
  abandoned(tag: string): Promise<void>;
  /**
   * The intents given up whose batch may still appear (a run folder's: ./batch.ts readAbandoned), looked up again on
   * every later run, a late batch cancelled; absent where the ledger does not keep them.
   */
  abandonedIntents?(): Promise<BatchIntent[]>;
  /** A late batch of an abandoned intent, cancelled. */
  lateCancelled?(tag: string, id: string): Promise<void>;
  submitted(b: {
    id: string;
    provider: string;
    keys: string[];
    inputFileId?: string;
    tag?: string;
  }): Promise<void>;
  collected(b: { id: string; status: string; answered: number }): Promise<void>;
  /** Where a waiting batch stands, each time that changes (for `plan status`; a run folder's log says it). */
  seen?(state: BatchState): Promise<void>;
}

const LEDGER = 'batches.jsonl';

/** The ledger of a run folder: `batches.jsonl`, one JSON line per event. */
export function folderLedger(outDir: string): BatchLedger {
  // A torn last line (a kill while a record was written) is cut, kept aside, before this ledger's first record.
  let repaired = false;
  const record = (outDir: string, entry: Record<string, unknown>): void => {
    if (!repaired) {
      cutTornTail(join(outDir, LEDGER));
      repaired = true;
    }
    appendRecord(outDir, entry);
  };
  return {
    read: async () => readBatchLedger(outDir),
    intents: async () => readIntents(outDir),
    creating: async (i) =>
      record(outDir, {
        event: 'creating',
        tag: i.tag,
        provider: i.provider,
        requests: i.keys.length,
        keys: i.keys,
        at: i.at,
      }),
    abandoned: async (tag) => record(outDir, { event: 'abandoned', tag }),
    abandonedIntents: async () => readAbandoned(outDir),
    lateCancelled: async (tag, id) => record(outDir, { event: 'late-cancelled', tag, id }),
    submitted: async (b) =>
      record(outDir, {
        event: 'submitted',
        id: b.id,
        provider: b.provider,
        ...(b.tag ? { tag: b.tag } : {}),
        ...(b.inputFileId ? { input_file_id: b.inputFileId } : {}),
        requests: b.keys.length,
        keys: b.keys,
      }),
    collected: async (b) =>
      record(outDir, { event: 'collected', id: b.id, status: b.status, answered: b.answered }),
  };
}

interface LedgerLine {
  event?: unknown;
  id?: unknown;
  tag?: unknown;
  provider?: unknown;
  keys?: unknown;
  at?: unknown;
}

/**
 * The ledger's lines, parsed. A last line cut off by a kill while it was written is passed over: nothing was done
 * after it (an intent is written whole before its creating call, a batch recorded whole before it is waited for).
 * Any other damaged line is refused, named.
 */
function ledgerLines(outDir: string): LedgerLine[] {
  const file = join(outDir, LEDGER);
  if (!existsSync(file)) return [];
  const lines: LedgerLine[] = [];
  const text = readFileSync(file, 'utf8');
  const all = text.split('\n');
  for (const [i, line] of all.entries()) {
    if (line.trim() === '') continue;
    try {
      lines.push(JSON.parse(line));
    } catch {
      const torn = i === all.length - 1 && !text.endsWith('\n');
      if (torn) continue;
      // A torn line with this ledger's next record glued to it (written before torn lines were cut): the record.
      const glued = salvageGlued<LedgerLine>(line, '{"at":"');
      if (glued) {
        lines.push(glued);
        continue;
      }
      throw new RumedbenchError(
        'RUN_FOLDER_INVALID',
        `${file}:${i + 1}: not a JSON line; the batch ledger is damaged. Remove that line only if rumedbench did not write it: a batch it records would be forgotten, and its requests sent again`,
      );
    }
  }
  return lines;
}

const stringsOf = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((k): k is string => typeof k === 'string') : [];

/** The intents of a run folder whose creating call's outcome was never recorded. */
export function readIntents(outDir: string): BatchIntent[] {
  const open = new Map<string, BatchIntent>();
  for (const e of ledgerLines(outDir)) {
    if (typeof e.tag !== 'string') continue;
    if (e.event === 'creating' && typeof e.at === 'string')
      open.set(e.tag, { tag: e.tag, provider: String(e.provider), keys: stringsOf(e.keys), at: e.at });
    else if (e.event === 'submitted' || e.event === 'abandoned') open.delete(e.tag);
  }
  return [...open.values()];
}

/**
 * The intents of a run folder given up (looked up, not found, their requests sent again under another), within the
 * providers' window in which a creating call that was still under way may yet make their batch (#59 item 6).
 */
export function readAbandoned(outDir: string, now = Date.now()): BatchIntent[] {
  const made = new Map<string, BatchIntent>();
  const given = new Set<string>();
  for (const e of ledgerLines(outDir)) {
    if (typeof e.tag !== 'string') continue;
    if (e.event === 'creating' && typeof e.at === 'string')
      made.set(e.tag, { tag: e.tag, provider: String(e.provider), keys: stringsOf(e.keys), at: e.at });
    else if (e.event === 'abandoned') given.add(e.tag);
    // One creating call makes one batch at most: once its late batch is cancelled, the tag is settled.
    else if (e.event === 'late-cancelled') made.delete(e.tag);
  }
  return [...given]
    .map((t) => made.get(t))
    .filter((i): i is BatchIntent => i !== undefined && now - Date.parse(i.at) < LATE_WINDOW_MS);
}

/** How long after its creating call a batch may still appear: the providers' 24-hour window and an hour. */
const LATE_WINDOW_MS = 25 * 3_600_000;

/** The batches a run folder records: each submitted one, and whether its results were collected. */
export function readBatchLedger(outDir: string): RecordedBatch[] {
  const byId = new Map<string, RecordedBatch>();
  for (const e of ledgerLines(outDir)) {
    if (typeof e.id !== 'string') continue;
    if (e.event === 'submitted' && Array.isArray(e.keys))
      byId.set(e.id, {
        id: e.id,
        provider: String(e.provider),
        keys: stringsOf(e.keys),
        collected: false,
        ...(typeof e.at === 'string' ? { at: e.at } : {}),
        ...(typeof e.tag === 'string' ? { tag: e.tag } : {}),
      });
    else if (e.event === 'collected') {
      const r = byId.get(e.id);
      if (r) r.collected = true;
    }
  }
  return [...byId.values()];
}

const appendRecord = (outDir: string, entry: Record<string, unknown>): void =>
  appendFileSync(
    join(outDir, LEDGER),
    `${redactSecrets(JSON.stringify({ at: new Date().toISOString(), ...entry }))}\n`,
  );

/** What identifies a result's content: two lines for one request that differ here are two different answers. */
const contentOf = (r: BatchResult): string =>
  createHash('sha256')
    .update(
      'reply' in r
        ? JSON.stringify(['reply', r.reply.text, r.reply.reasoning ?? null])
        : JSON.stringify(['error', r.error]),
    )
    .digest('base64');

/**
 * Journals a batch's results: each line that answers one of `keys`, as the answer an online request would have
 * journaled, or as its failure. A request answered twice alike counts once; answered twice differently it fails,
 * named, whichever line came first (the score must not depend on the order of a file's lines). Returns the keys
 * answered and the lines read.
 */
export async function journalResults(
  results: AsyncIterable<BatchResult> | Iterable<BatchResult>,
  o: {
    byKey: ReadonlyMap<string, LlmRequest>;
    keys: ReadonlySet<string>;
    journal: { append(entry: JournalEntry): void | Promise<void> };
    label: string;
  },
): Promise<{ seen: Set<string>; lines: number; conflicts: number }> {
  // Per request, the digest of its first result line (a few dozen bytes each, whatever the replies' size).
  const first = new Map<string, string>();
  const conflicted = new Set<string>();
  const at = new Date().toISOString();
  let lines = 0;
  for await (const r of results) {
    lines++;
    const request = o.byKey.get(r.key);
    // A line for a request the batch did not hold (another run's, or a provider's mistake) is not an answer here.
    if (!request || !o.keys.has(r.key) || conflicted.has(r.key)) continue;
    const base = {
      key: r.key,
      task: request.task.name,
      split: request.split,
      id: request.record.id,
      latencyMs: 0,
      at,
    };
    const digest = contentOf(r);
    const seenAs = first.get(r.key);
    if (seenAs !== undefined) {
      if (seenAs === digest) continue;
      conflicted.add(r.key);
      await o.journal.append({
        ...base,
        status: 'error',
        conflict: true,
        error: `${o.label}: two different results for this request (custom_id ${r.key}); neither is taken as its answer`,
      });
      continue;
    }
    first.set(r.key, digest);
    await o.journal.append(
      'reply' in r
        ? {
            ...base,
            status: 'ok',
            reply: r.reply.text,
            ...(r.reply.reasoning !== undefined ? { reasoning: r.reply.reasoning } : {}),
            ...(r.reply.usage
              ? { usage: r.reply.usage }
              : r.reply.usageProblem && request.kind === 'chat'
                ? { usage: estimatedUsage(request.messages, r.reply) }
                : {}),
            ...(r.reply.usageProblem ? { usageProblem: r.reply.usageProblem } : {}),
            ...(r.reply.finishReason ? { finishReason: r.reply.finishReason } : {}),
            ...(r.reply.model ? { model: r.reply.model } : {}),
          }
        : { ...base, status: 'error', error: `${o.label}: ${r.error}` },
    );
  }
  return { seen: new Set(first.keys()), lines, conflicts: conflicted.size };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The longest wait between two looks at a batch. */
const MAX_POLL_MS = 300_000;

/** A wait in words: seconds, minutes or hours. */
const formatWait = (ms: number): string =>
  ms < 60_000
    ? `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`
    : ms < 3_600_000
      ? `${Math.round(ms / 60_000)} min`
      : `${(ms / 3_600_000).toFixed(1)} h`;

/** Creating calls at most, for one batch, before the run stops (each after looking the batch up). */
const CREATE_TRIES = 5;
/** The longest a refused creating call (429) is waited out before the run stops with `--resume`. */
const MAX_CREATE_WAIT_MS = 10 * 60_000;
/** Failed looks at a batch are tried again for this many creating windows (`settleMs`, two --timeout-ms each). */
const STATUS_PATIENCE = 5;

/**
 * The batch of an intent at the provider, looked for until `until` (ms): a creation still under way behind a call
 * that got no answer shows in the provider's list once it is done. Found several times under one tag (a call that
 * timed out and created anyway), the oldest is kept and the others cancelled, named: the requests are paid once.
 */
async function lookUp(
  api: BatchApi,
  intent: BatchIntent,
  known: ReadonlySet<string>,
  log: Logger,
  until: number,
): Promise<string | undefined> {
  for (let waitMs = 500; ; waitMs = Math.min(waitMs * 2, 30_000)) {
    const found = await api.find(intent, known).catch((e: unknown) => {
      if ((e as { status?: unknown }).status !== 404) throw e;
      throw new RumedbenchError(
        'RUN_INCOMPLETE',
        `a batch of ${intent.keys.length} requests was being created when the last call got no answer, and the provider has no list of batches to look it up in (${(e as Error).message}): nothing is created blindly. Look at the provider's batches (tag ${intent.tag}), then continue with the same command and --resume`,
        { cause: e },
      );
    });
    if (found.length > 0) return keepOne(api, intent, found, log);
    if (Date.now() >= until) return undefined;
    await sleep(Math.min(waitMs, Math.max(0, until - Date.now())));
  }
}

/**
 * A creating call given up on (its intent abandoned, its requests sent under another) may still make its batch later,
 * behind a gateway that answered for it: every later run looks the abandoned tags up again and cancels what it finds,
 * named, so that those requests are not paid twice. A provider without the list of batches cannot be asked: skipped.
 */
async function cancelLate(
  api: BatchApi,
  ledger: BatchLedger,
  known: ReadonlySet<string>,
  log: Logger,
): Promise<void> {
  if (!api.tagged || !ledger.abandonedIntents) return;
  for (const intent of await ledger.abandonedIntents()) {
    if (intent.provider !== api.name) continue;
    const found = await api.find(intent, known).catch((e: unknown) => {
      if ((e as { status?: unknown }).status === 404) return [];
      throw e;
    });
    for (const id of found) {
      await api.cancel(id);
      await ledger.lateCancelled?.(intent.tag, id);
      log.warn(
        `batch ${id}: made late by a creating call an earlier run gave up on (tag ${intent.tag}), after its ${intent.keys.length} requests were sent again: cancelled, so they are not paid twice`,
      );
    }
  }
}

/** One batch of an intent kept (`keep`, else the oldest found); the others of its tag cancelled, named. */
async function keepOne(
  api: BatchApi,
  intent: BatchIntent,
  found: readonly string[],
  log: Logger,
  keep = found[0] as string,
): Promise<string> {
  if (!api.tagged) return keep;
  for (const extra of found.filter((id) => id !== keep)) {
    await api.cancel(extra);
    log.warn(
      `batch ${extra}: a second batch of the same ${intent.keys.length} requests (tag ${intent.tag}), made by a creating call that got no answer in time: cancelled, batch ${keep} is this run's`,
    );
  }
  return keep;
}

/**
 * Creates a batch once: the creating call is made, and when its answer does not come (a timeout, a dropped
 * connection, a 5xx or 429), the provider is asked for the batch for as long as the call may still be under way
 * (`settleMs`) before the call is made again.
 */
async function createOnce(
  api: BatchApi,
  file: string,
  intent: BatchIntent,
  known: ReadonlySet<string>,
  log: Logger,
): Promise<{ id: string; inputFileId?: string }> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await api.submit(file, intent.tag);
    } catch (e) {
      const err = e as Error & {
        retryable?: unknown;
        fatal?: unknown;
        status?: unknown;
        retryAfter?: unknown;
      };
      // A 429 is an answer: the call was refused and made no batch. It is made again once the wait the provider
      // asks for (Retry-After) is over, without looking the batch up.
      if (err.status === 429 && err.fatal !== true && attempt < CREATE_TRIES) {
        const hinted = typeof err.retryAfter === 'number' ? err.retryAfter : undefined;
        const wait = hinted ?? Math.min(1000 * 2 ** attempt, MAX_CREATE_WAIT_MS);
        if (wait > MAX_CREATE_WAIT_MS)
          throw new RumedbenchError(
            'RUN_INCOMPLETE',
            `creating a batch of ${intent.keys.length} requests was refused for now (${err.message}), and the provider asks to wait ${formatWait(wait)} (Retry-After), longer than ${formatWait(MAX_CREATE_WAIT_MS)}: continue with the same command and --resume later`,
            { cause: e },
          );
        log.warn(
          `creating a batch of ${intent.keys.length} requests was refused for now (${err.message}); creating it again in ${formatWait(wait)}${hinted !== undefined ? ', as the provider asks (Retry-After)' : ''}`,
        );
        await sleep(wait);
        continue;
      }
      if (err.retryable !== true || err.fatal === true || attempt >= CREATE_TRIES)
        throw new RumedbenchError(
          'RUN_INCOMPLETE',
          `creating a batch of ${intent.keys.length} requests failed (${err.message}); continue with the same command and --resume, which asks the provider for it before creating one`,
          { cause: e },
        );
      log.warn(
        `creating a batch of ${intent.keys.length} requests got no answer (${err.message}); looking for it at the provider for up to ${formatWait(api.settleMs)} before creating it again`,
      );
      const found = await lookUp(api, intent, known, log, Date.now() + api.settleMs);
      if (found !== undefined) {
        log.info(
          `batch ${found}: created by the call that got no answer; found at the provider, not created again`,
        );
        return { id: found };
      }
    }
  }
}

export interface RunBatchesOptions {
  api: BatchApi;
  /** Every request of the run (the ledger's uncollected batches are matched against them). */
  requests: readonly LlmRequest[];
  /** What to send now: the requests without an answer (or, with --retry-errors, with a failed one). */
  pending: readonly LlmRequest[];
  params: SamplingParams;
  journal: { append(entry: JournalEntry): void | Promise<void> };
  /** Where the results files are saved while they are read (and the batch ledger kept, unless `ledger` is given). */
  outDir: string;
  ledger?: BatchLedger;
  /** The first wait between two looks at a batch, in seconds; doubled up to five minutes. */
  pollS: number;
  /** How long a batch is waited for, hours after it was submitted (default BATCH_DEFAULTS.deadlineH). */
  deadlineH?: number;
  log: Logger;
  signal?: AbortSignal;
}

/**
 * Sends the pending requests as batches (after collecting any a killed run left waiting), waits for them, and
 * journals every result. Returns the batches' ids and the wall time.
 */
export async function runBatches(o: RunBatchesOptions): Promise<{ ids: string[]; wallS: number }> {
  const started = Date.now();
  const byKey = new Map(o.requests.map((j) => [j.key, j]));
  // The most tokens a batch's replies may have: what its results are capped at (resultsCap).
  const mostTokens = (keys: readonly string[]): number =>
    keys.reduce((most, k) => {
      const j = byKey.get(k);
      return Math.max(most, (j?.kind === 'chat' ? j.params?.maxTokens : undefined) ?? o.params.maxTokens);
    }, 0);
  const ledger = o.ledger ?? folderLedger(o.outDir);
  const recorded = await ledger.read();
  const waiting = recorded.filter((b) => !b.collected);
  const known = new Set(recorded.map((b) => b.id));
  const ids = recorded.map((b) => b.id);
  for (const b of waiting) {
    // A batch of requests this run would not make (its settings changed since): collected, its answers would match
    // nothing and be dropped, paid for.
    const foreign = b.keys.filter((k) => !byKey.has(k)).length;
    if (foreign > 0)
      throw new UsageError(
        `batch ${b.id} holds ${foreign} request(s) this run would not ask (a setting that changes a request differs from the run's that made it: --model, --temperature, --top-p, --seed, --max-tokens, the prompt or the system prompt): collecting it would drop its paid answers. Resume with the settings it was made with, or give a new --out`,
      );
    o.log.info(`batch ${b.id}: submitted by an earlier run; collecting its ${b.keys.length} requests`);
  }
  // An earlier run recorded that it was creating a batch and never learnt whether it did (killed, or its creating
  // call unanswered): the provider is asked before anything is created again.
  for (const intent of await ledger.intents()) {
    if (intent.provider !== o.api.name) continue;
    // A creating call the killed run sent may still be under way: looked for until it could have ended.
    const until = Date.parse(intent.at) + o.api.settleMs;
    if (Date.now() < until)
      o.log.info(
        `an earlier run was creating a batch of ${intent.keys.length} requests when it stopped; looking for it at the provider for up to ${formatWait(until - Date.now())}`,
      );
    const id = await lookUp(o.api, intent, known, o.log, until);
    if (id === undefined) {
      await ledger.abandoned(intent.tag);
      o.log.info(
        `an earlier run was creating a batch of ${intent.keys.length} requests when it stopped; the provider has none by its tag, so its requests are sent now`,
      );
      continue;
    }
    await ledger.submitted({ id, provider: o.api.name, keys: intent.keys, tag: intent.tag });
    known.add(id);
    ids.push(id);
    waiting.push({
      id,
      provider: o.api.name,
      keys: intent.keys,
      collected: false,
      at: intent.at,
      tag: intent.tag,
    });
    o.log.info(
      `batch ${id}: created by an earlier run that never got the answer; found at the provider, collecting its ${intent.keys.length} requests`,
    );
  }
  await cancelLate(o.api, ledger, known, o.log);
  const inFlight = new Set(waiting.flatMap((b) => b.keys));

  const toSend = o.pending.filter((j) => !inFlight.has(j.key));
  const chats = toSend.filter((j): j is Extract<LlmRequest, { kind: 'chat' }> => j.kind === 'chat');
  const fresh: RecordedBatch[] = [];
  // Each batch's input is written to a file as its lines are made and sent from there: a run of tens of thousands of
  // requests never holds its batch file in memory.
  const tmp = mkdtempSync(join(tmpdir(), 'rumedbench-batch-'));
  try {
    const { head, sep, tail } = o.api.frame;
    const sepBytes = Buffer.byteLength(sep);
    const frameBytes = Buffer.byteLength(head) + Buffer.byteLength(tail);
    let keys: string[] = [];
    let bytes = frameBytes;
    let file = '';
    let out: WriteStream | undefined;
    const send = async () => {
      if (!out) return;
      out.end(tail);
      await finished(out);
      out = undefined;
      const intent: BatchIntent = {
        tag: `rumedbench-${randomUUID()}`,
        provider: o.api.name,
        keys,
        at: new Date().toISOString(),
      };
      await ledger.creating(intent);
      const { id, inputFileId } = await createOnce(o.api, file, intent, known, o.log);
      // Recorded before anything else happens: from here on, a killed run collects this batch and never resends it.
      await ledger.submitted({
        id,
        provider: o.api.name,
        keys,
        tag: intent.tag,
        ...(inputFileId ? { inputFileId } : {}),
      });
      known.add(id);
      o.log.info(`batch ${id}: submitted, ${keys.length} requests`);
      fresh.push({
        id,
        provider: o.api.name,
        keys,
        collected: false,
        at: new Date().toISOString(),
        tag: intent.tag,
      });
      ids.push(id);
      rmSync(file, { force: true });
      keys = [];
      bytes = frameBytes;
    };
    for (const j of chats) {
      if (o.signal?.aborted) break;
      const line = o.api.line(j.key, j.messages, j.params ?? o.params);
      const size = Buffer.byteLength(line) + sepBytes;
      if (keys.length > 0 && (keys.length >= o.api.limits.requests || bytes + size > o.api.limits.bytes))
        await send();
      if (!out) {
        file = join(tmp, `batch-${fresh.length + 1}.jsonl`);
        out = createWriteStream(file);
        out.write(head);
      } else out.write(sep);
      if (!out.write(line)) await once(out, 'drain');
      keys.push(j.key);
      bytes += size;
    }
    if (!o.signal?.aborted) await send();
    else out?.destroy();
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }

  // A recorded batch the provider no longer knows (404: deleted, or its records expired) has ended for good: its
  // requests fail, named, and --retry-errors asks them again; it never blocks the run folder.
  // One 404 is not taken as the end (a provider's replica behind, a moment's confusion): three in a row, a second and
  // two apart, are.
  // A look that fails otherwise (5xx, no answer) is tried again, backing off, for STATUS_PATIENCE creating windows
  // (each two --timeout-ms); then the run stops with --resume, the batch waiting in the ledger.
  const look = async (id: string): Promise<BatchState> => {
    let failingSince: number | undefined;
    let backoff = 1000;
    for (let tries = 1; ; ) {
      try {
        return await o.api.state(id);
      } catch (e) {
        const err = e as Error & { status?: unknown; retryable?: unknown; fatal?: unknown };
        if (err.status !== 404) {
          failingSince ??= Date.now();
          const patience = STATUS_PATIENCE * o.api.settleMs;
          if (err.retryable !== true || err.fatal === true) throw e;
          if (Date.now() - failingSince >= patience)
            throw new RumedbenchError(
              'RUN_INCOMPLETE',
              `looking at batch ${id} failed again and again for ${formatWait(Date.now() - failingSince)} (the last: ${err.message}); the batch is recorded and waits at the provider: continue with the same command and --resume, which collects it`,
              { cause: e },
            );
          o.log.warn(
            `looking at batch ${id} failed (${err.message}); looking again in ${formatWait(backoff)}`,
          );
          await sleep(backoff);
          backoff = Math.min(backoff * 2, MAX_POLL_MS);
          continue;
        }
        if (tries < 3) {
          await sleep(1000 * tries);
          tries++;
          continue;
        }
        return {
          id,
          status: 'unknown to the provider',
          ended: true,
          failure: `HTTP 404 three times in a row: ${(e as Error).message}`,
        };
      }
    }
  };
  let noList = false;
  for (const b of [...waiting, ...fresh]) {
    let state = await look(b.id);
    let waitMs = o.pollS * 1000;
    let said = '';
    let saidAt = 0;
    const deadlineH = o.deadlineH ?? BATCH_DEFAULTS.deadlineH;
    const submitted = b.at !== undefined && Number.isFinite(Date.parse(b.at)) ? Date.parse(b.at) : started;
    const deadline = submitted + deadlineH * 3_600_000;
    let unknownSaid = false;
    const sayUnknown = (s: BatchState) => {
      if (!s.unknownWord || unknownSaid) return;
      unknownSaid = true;
      o.log.warn(
        `batch ${b.id}: the provider says "${s.status}", a status word this client does not know; it is read as ended once its request counts show every request done, and waited on (to --batch-deadline) until then`,
      );
    };
    sayUnknown(state);
    while (!state.ended) {
      const line = `batch ${b.id}: ${state.status}${state.counts ? `, ${state.counts.completed} of ${state.counts.total} done, ${state.counts.failed} failed` : ''}`;
      // Said when it changes, at each doubling of the wait, and at least hourly: a waiting run is never silent long.
      const doubling = waitMs < MAX_POLL_MS;
      if (line !== said || doubling || Date.now() - saidAt >= 3_600_000) {
        o.log.info(
          `${line}${line === said ? ` (waited ${formatWait(Date.now() - submitted)}; next look in ${formatWait(waitMs)})` : ''}`,
        );
        saidAt = Date.now();
        if (line !== said) await ledger.seen?.(state);
      }
      said = line;
      if (Date.now() > deadline)
        throw new RumedbenchError(
          'RUN_INCOMPLETE',
          `batch ${b.id} is still ${state.status || 'without a status'} ${formatWait(Date.now() - submitted)} after it was submitted, past the deadline of ${deadlineH} h (--batch-deadline): nothing more is waited for. Continue with the same command and --resume, which collects it once it ends (with a longer --batch-deadline if it needs one), or cancel it at the provider`,
        );
      if (o.signal?.aborted)
        throw new RumedbenchError(
          'RUN_INCOMPLETE',
          `stopped while batch ${b.id} was ${state.status}; continue with the same command and --resume, which collects it`,
        );
      await sleep(Math.min(waitMs, Math.max(0, deadline - Date.now()) + 1));
      waitMs = Math.min(waitMs * 2, MAX_POLL_MS);
      state = await look(b.id);
      sayUnknown(state);
    }
    const c = state.counts;
    o.log.info(
      state.unknownWord && c
        ? `batch ${b.id}: "${state.status}", but its request counts show every request done (${c.completed + c.failed} of ${c.total}): read as ended`
        : `batch ${b.id}: ${state.status}`,
    );
    // A creating call that got no answer and created after all, later than it was looked for: cancelled now.
    if (o.api.tagged && b.tag !== undefined) {
      const intent = {
        tag: b.tag,
        provider: b.provider,
        keys: b.keys,
        at: b.at ?? new Date(started).toISOString(),
      };
      const found = await o.api.find(intent, new Set()).catch((e: unknown) => {
        // A provider without the list (an OpenAI-compatible server answering 404): the ledger's batch is collected,
        // never dropped for a look that cannot be made.
        if ((e as { status?: unknown }).status !== 404) throw e;
        if (!noList)
          o.log.warn(
            `the provider has no list of batches (${(e as Error).message}): a second batch a creating call may have made cannot be looked for; the batches the ledger holds are collected`,
          );
        noList = true;
        return [];
      });
      if (found.length > 1) await keepOne(o.api, intent, found, o.log, b.id);
    }
    let read: Awaited<ReturnType<typeof journalResults>>;
    try {
      read = await journalResults(
        state.failure ? [] : o.api.results(state, o.outDir, b.keys, mostTokens(b.keys)),
        {
          byKey,
          keys: new Set(b.keys),
          journal: o.journal,
          label: `batch ${b.id}`,
        },
      );
    } catch (e) {
      // The batch is done at the provider and still recorded as not collected: nothing of it is lost.
      throw new RumedbenchError(
        'RUN_INCOMPLETE',
        `batch ${b.id} ended${state.status === 'ended' ? '' : ` ${state.status}`}, but its results could not be read (${(e as Error).message}). Continue with the same command and --resume, which collects them again`,
        { cause: e },
      );
    }
    const { seen, conflicts } = read;
    if (conflicts > 0)
      o.log.warn(
        `batch ${b.id}: ${conflicts} request(s) answered twice, differently: failed, not scored (--retry-errors asks them again)`,
      );
    // Requests the batch ended without answering (a batch that failed, expired or was cancelled) failed too.
    const at = new Date().toISOString();
    for (const key of b.keys) {
      if (seen.has(key)) continue;
      const request = byKey.get(key);
      if (!request) continue;
      await o.journal.append({
        key,
        task: request.task.name,
        split: request.split,
        id: request.record.id,
        status: 'error',
        error: `batch ${b.id} ended${state.status === 'ended' ? '' : ` ${state.status}`}${state.failure ? ` (${state.failure})` : ''} without an answer to this request (none came, or one longer than --max-reply-bytes allows, which is not read)`,
        latencyMs: 0,
        at,
      });
    }
    await ledger.collected({ id: b.id, status: state.status, answered: seen.size });
  }
  return { ids, wallS: (Date.now() - started) / 1000 };
}
