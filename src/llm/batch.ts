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
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import {
  appendFileSync,
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
import { RumedbenchError } from '../errors.js';
import type { Logger } from '../log.js';
import type { JournalEntry } from './journal.js';
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
}

/** One request's outcome in a batch's results: its reply, or why it failed. */
export type BatchResult = { key: string; reply: ChatReply } | { key: string; error: string };

/** What a provider's batch API must do; a provider without one has no `batches`. */
export interface BatchApi {
  readonly name: string;
  /** The most requests and bytes one batch may hold. */
  readonly limits: { requests: number; bytes: number };
  /** One request as a line of the batch's input. */
  line(key: string, messages: readonly ChatMessage[], params: SamplingParams): string;
  /** How the lines are put together in the file sent: OpenAI's JSONL, or Anthropic's one JSON body. */
  readonly frame: { head: string; sep: string; tail: string };
  /** Sends the batch written in `file` (framed lines). */
  submit(file: string): Promise<{ id: string; inputFileId?: string }>;
  state(id: string): Promise<BatchState>;
  /**
   * The results of an ended batch, as they are read: the provider's files saved into `dir` as they arrive, then read
   * line by line (never whole in memory). `requests` is how many the batch holds by our own record: the results are
   * capped at that many replies (each at the reply cap, with its line's slack), never by the provider's claim.
   */
  results(state: BatchState, dir: string, requests: number): AsyncIterable<BatchResult>;
}

/**
 * The most bytes a batch's results may take: each request's reply at the cap, plus its line's slack (ids, status,
 * usage), for the requests the batch holds by our record. A provider's count of its requests is not trusted: with
 * none, 45 honest replies failed a whole file; with 10¹² a gzip bomb filled the disk.
 */
export function resultsCap(replyCap: number, requests: number): { bytes: number; says: string } {
  const bytes = Math.max(1, requests) * (replyCap + LINE_SLACK);
  return {
    bytes,
    says: `the batch's ${requests} requests can take (${requests} × (--max-reply-bytes ${replyCap} + ${LINE_SLACK} for the line around a reply)): continue with --resume, which collects the batch again, after raising --max-reply-bytes if the replies are that long`,
  };
}

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

/** A submitted batch as its ledger records it: its requests' keys, and whether its results were collected. */
export interface RecordedBatch {
  id: string;
  provider: string;
  keys: string[];
  collected: boolean;
  /** When it was submitted (ISO), where the ledger says: its deadline counts from then. */
  at?: string;
}

/**
 * Where a run records its batches the moment they are submitted, and when their results were collected: a run
 * folder's `batches.jsonl` (`llm --batch`, `plan run`), or the queue's database (workers).
 */
export interface BatchLedger {
  read(): Promise<RecordedBatch[]>;
  submitted(b: { id: string; provider: string; keys: string[]; inputFileId?: string }): Promise<void>;
  collected(b: { id: string; status: string; answered: number }): Promise<void>;
  /** Where a waiting batch stands, each time that changes (for `plan status`; a run folder's log says it). */
  seen?(state: BatchState): Promise<void>;
}

const LEDGER = 'batches.jsonl';

/** The ledger of a run folder: `batches.jsonl`, one JSON line per event. */
export function folderLedger(outDir: string): BatchLedger {
  return {
    read: async () => readBatchLedger(outDir),
    submitted: async (b) =>
      record(outDir, {
        event: 'submitted',
        id: b.id,
        provider: b.provider,
        ...(b.inputFileId ? { input_file_id: b.inputFileId } : {}),
        requests: b.keys.length,
        keys: b.keys,
      }),
    collected: async (b) =>
      record(outDir, { event: 'collected', id: b.id, status: b.status, answered: b.answered }),
  };
}

/** The batches a run folder records: each submitted one, and whether its results were collected. */
export function readBatchLedger(outDir: string): RecordedBatch[] {
  const file = join(outDir, LEDGER);
  if (!existsSync(file)) return [];
  const byId = new Map<string, RecordedBatch>();
  for (const [i, line] of readFileSync(file, 'utf8').split('\n').entries()) {
    if (line.trim() === '') continue;
    let e: { event?: unknown; id?: unknown; provider?: unknown; keys?: unknown; at?: unknown };
    try {
      e = JSON.parse(line);
    } catch {
      // A line cut off by a kill while it was written: the only line that can be, the last.
      throw new RumedbenchError(
        'RUN_FOLDER_INVALID',
        `${file}:${i + 1}: not a JSON line; the batch ledger is damaged`,
      );
    }
    if (typeof e.id !== 'string') continue;
    if (e.event === 'submitted' && Array.isArray(e.keys))
      byId.set(e.id, {
        id: e.id,
        provider: String(e.provider),
        keys: e.keys.filter((k): k is string => typeof k === 'string'),
        collected: false,
        ...(typeof e.at === 'string' ? { at: e.at } : {}),
      });
    else if (e.event === 'collected') {
      const r = byId.get(e.id);
      if (r) r.collected = true;
    }
  }
  return [...byId.values()];
}

const record = (outDir: string, entry: Record<string, unknown>): void =>
  appendFileSync(join(outDir, LEDGER), `${JSON.stringify({ ...entry, at: new Date().toISOString() })}\n`);

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
    const job = o.byKey.get(r.key);
    // A line for a request the batch did not hold (another run's, or a provider's mistake) is not an answer here.
    if (!job || !o.keys.has(r.key) || conflicted.has(r.key)) continue;
    const base = { key: r.key, task: job.task.name, split: job.split, id: job.record.id, latencyMs: 0, at };
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
            ...(r.reply.usage ? { usage: r.reply.usage } : {}),
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

/**
 * Sends the pending requests as batches (after collecting any a killed run left waiting), waits for them, and
 * journals every result. Returns the batches' ids and the wall time.
 */
export async function runBatches(o: {
  api: BatchApi;
  /** Every request of the run (the ledger's uncollected batches are matched against them). */
  jobs: readonly LlmRequest[];
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
}): Promise<{ ids: string[]; wallS: number }> {
  const started = Date.now();
  const byKey = new Map(o.jobs.map((j) => [j.key, j]));
  const ledger = o.ledger ?? folderLedger(o.outDir);
  const recorded = await ledger.read();
  const waiting = recorded.filter((b) => !b.collected);
  const inFlight = new Set(waiting.flatMap((b) => b.keys));
  const ids = recorded.map((b) => b.id);
  for (const b of waiting)
    o.log.info(`batch ${b.id}: submitted by an earlier run; collecting its ${b.keys.length} requests`);

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
      const { id, inputFileId } = await o.api.submit(file);
      // Recorded before anything else happens: from here on, a killed run collects this batch and never resends it.
      await ledger.submitted({ id, provider: o.api.name, keys, ...(inputFileId ? { inputFileId } : {}) });
      o.log.info(`batch ${id}: submitted, ${keys.length} requests`);
      fresh.push({ id, provider: o.api.name, keys, collected: false, at: new Date().toISOString() });
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
  const look = async (id: string): Promise<BatchState> => {
    try {
      return await o.api.state(id);
    } catch (e) {
      if ((e as { status?: unknown }).status !== 404) throw e;
      return {
        id,
        status: 'unknown to the provider',
        ended: true,
        failure: `HTTP 404: ${(e as Error).message}`,
      };
    }
  };
  for (const b of [...waiting, ...fresh]) {
    let state = await look(b.id);
    let waitMs = o.pollS * 1000;
    let said = '';
    let saidAt = 0;
    const deadlineH = o.deadlineH ?? BATCH_DEFAULTS.deadlineH;
    const submitted = b.at !== undefined && Number.isFinite(Date.parse(b.at)) ? Date.parse(b.at) : started;
    const deadline = submitted + deadlineH * 3_600_000;
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
    }
    o.log.info(`batch ${b.id}: ${state.status}`);
    let read: Awaited<ReturnType<typeof journalResults>>;
    try {
      read = await journalResults(state.failure ? [] : o.api.results(state, o.outDir, b.keys.length), {
        byKey,
        keys: new Set(b.keys),
        journal: o.journal,
        label: `batch ${b.id}`,
      });
    } catch (e) {
      // The batch is done at the provider and still recorded as not collected: nothing of it is lost.
      throw new RumedbenchError(
        'RUN_INCOMPLETE',
        `batch ${b.id} ended ${state.status}, but its results could not be read (${(e as Error).message}). Continue with the same command and --resume, which collects them again`,
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
      const job = byKey.get(key);
      if (!job) continue;
      await o.journal.append({
        key,
        task: job.task.name,
        split: job.split,
        id: job.record.id,
        status: 'error',
        error: `batch ${b.id} ended ${state.status}${state.failure ? ` (${state.failure})` : ''} without an answer to this request (none came, or one longer than --max-reply-bytes allows, which is not read)`,
        latencyMs: 0,
        at,
      });
    }
    await ledger.collected({ id: b.id, status: state.status, answered: seen.size });
  }
  return { ids, wallS: (Date.now() - started) / 1000 };
}
