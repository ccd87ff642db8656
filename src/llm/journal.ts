/**
 * The run journal: one JSON line per finished request, appended synchronously the moment its reply arrives, so a
 * run killed at any point (SIGKILL included) loses at most the requests in flight. Entries are keyed by the request
 * (messages and sampling parameters): a resumed run sends only what has no successful entry. Failures are journaled
 * too, for the record and for `--retry-errors`, but never stand in for an answer.
 *
 * A journal is read as a stream of bytes split at newlines, never as one string: a journal of any size opens, and a
 * line over `maxLineBytes` (a reply from before replies were capped) is skipped unread, its request asked again.
 */
import {
  appendFileSync,
  closeSync,
  createReadStream,
  existsSync,
  fstatSync,
  ftruncateSync,
  openSync,
  readSync,
} from 'node:fs';
import { redactSecrets } from '../log.js';
import type { Usage } from './provider.js';

/**
 * How an answer was bought, so that it is priced at what was paid for it however the run folder goes on: online at the
 * list prices, in a batch at its discount (the share of the prices it saves), or read from a results file (a batch
 * run elsewhere, priced at the list prices: what it cost is not known here, and a budget may not count less).
 */
export interface Bought {
  via: 'online' | 'batch' | 'results-file';
  discount?: number;
}

export interface JournalEntry {
  key: string;
  task: string;
  split: string;
  id: string;
  status: 'ok' | 'error';
  reply?: string;
  /** The reasoning the server gave apart from the reply. */
  reasoning?: string;
  usage?: Usage;
  /** Why the server's token counts were not taken. */
  usageProblem?: string;
  finishReason?: string;
  /** The model the server says answered. */
  model?: string;
  latencyMs: number;
  error?: string;
  at: string;
  /** Log-likelihood: per candidate, the summed log-probability (null: unscored) and its token count. */
  logprobs?: (number | null)[];
  tokens?: number[];
  /** Log-likelihood: positions the engine evaluated. */
  positions?: number;
  /** A failure that takes the place of an answer journaled before: its results disagreed (a batch's duplicates). */
  conflict?: true;
  /** How the answer was bought (absent in journals of older versions and in a queue cell's). */
  bought?: Bought;
}

/** Lines longer than this are not read (a capped reply, JSON-escaped, is far below it). */
const MAX_JOURNAL_LINE_BYTES = 64 << 20;
/**
 * A reply longer than the run's reply cap (`--max-reply-bytes`; a character is at least a byte) is not kept as an
 * answer: it can only come from a run made before replies were capped, and a few of them would not fit in one string
 * when the run folder is written.
 */
const DEFAULT_JOURNAL_REPLY_CHARS = 4 << 20;

/** Calls `f` with each line of a file, read in chunks; a line over `maxBytes` is counted and skipped, never decoded. */
export async function forEachLine(
  file: string,
  maxBytes: number,
  f: (line: string) => void,
): Promise<{ skipped: number }> {
  let parts: Buffer[] = [];
  let size = 0;
  let oversized = false;
  let skipped = 0;
  const end = () => {
    if (oversized) skipped++;
    else if (size > 0) f(Buffer.concat(parts, size).toString('utf8'));
    parts = [];
    size = 0;
    oversized = false;
  };
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    let from = 0;
    for (;;) {
      const nl = chunk.indexOf(10, from);
      const piece = chunk.subarray(from, nl < 0 ? chunk.length : nl);
      if (!oversized) {
        size += piece.length;
        if (size > maxBytes) {
          oversized = true;
          parts = [];
        } else parts.push(piece);
      }
      if (nl < 0) break;
      end();
      from = nl + 1;
    }
  }
  end();
  return { skipped };
}

/** The most bytes of a torn last line that are kept aside (a longer one is a reply's line, kept up to this much). */
const MAX_TORN_BYTES = 64 << 20;

/**
 * Cuts a torn last line (what follows the file's last newline: a line a killed process was writing) off an
 * append-only JSONL file before anything is appended to it, keeping it aside at the end of `<file>.torn`: appended
 * to, the next line would be glued onto it, and both lost (a glued answer asked and paid again; a ledger refused as
 * damaged about its own record). Only a writer (holding the run folder's lock) calls it. Returns the bytes cut.
 */
export function cutTornTail(file: string): number {
  if (!existsSync(file)) return 0;
  const fd = openSync(file, 'r+');
  try {
    const size = fstatSync(fd).size;
    // Back from the end, a chunk at a time, to the last newline.
    const chunk = Buffer.alloc(1 << 16);
    let end = size;
    let cut = -1;
    while (end > 0 && cut < 0) {
      const from = Math.max(0, end - chunk.length);
      const n = readSync(fd, chunk, 0, end - from, from);
      const nl = chunk.subarray(0, n).lastIndexOf(10);
      if (nl >= 0) cut = from + nl + 1;
      end = from;
    }
    if (cut < 0) cut = 0;
    if (cut === size) return 0;
    const torn = Buffer.alloc(Math.min(size - cut, MAX_TORN_BYTES));
    readSync(fd, torn, 0, torn.length, cut);
    appendFileSync(`${file}.torn`, Buffer.concat([torn, Buffer.from('\n')]));
    ftruncateSync(fd, cut);
    return size - cut;
  } finally {
    closeSync(fd);
  }
}

/**
 * A line that is not JSON but ends with a whole record starting with `opening` (a torn line with the next record
 * appended to it, as versions before the cut above wrote them): that record.
 */
export function salvageGlued<T>(line: string, opening: string): T | undefined {
  const at = line.lastIndexOf(opening);
  if (at <= 0) return undefined;
  try {
    return JSON.parse(line.slice(at)) as T;
  } catch {
    return undefined;
  }
}

export class Journal {
  /** Latest entry per key. */
  private readonly entries = new Map<string, JournalEntry>();
  /** Lines skipped on opening: too long, or cut short by a kill. */
  skipped = 0;
  /** Answers dropped on opening because their reply was too long to keep. */
  oversized = 0;
  /** Whether a torn last line was looked for (and cut) before this journal's first append. */
  private repaired = false;
  /** How the answers this process appends are bought (`buyingAs`). */
  private buying: Bought | undefined;
  /** Paid failures (replies cut off past the cap, with their counted ceilings) a later entry of their key replaced. */
  private readonly paidBefore: JournalEntry[] = [];

  private constructor(private readonly file: string) {}

  static async open(
    file: string,
    o: { maxLineBytes?: number; maxReplyChars?: number } = {},
  ): Promise<Journal> {
    const maxLineBytes = o.maxLineBytes ?? MAX_JOURNAL_LINE_BYTES;
    const maxReplyChars = o.maxReplyChars ?? DEFAULT_JOURNAL_REPLY_CHARS;
    const journal = new Journal(file);
    if (!existsSync(file)) return journal;
    const { skipped } = await forEachLine(file, maxLineBytes, (line) => {
      if (line.trim() === '') return;
      try {
        let e: JournalEntry;
        try {
          e = JSON.parse(line) as JournalEntry;
        } catch (err) {
          const glued = salvageGlued<JournalEntry>(line, '{"key":"');
          if (!glued) throw err;
          e = glued;
        }
        if (e.status === 'ok' && typeof e.reply === 'string' && e.reply.length > maxReplyChars) {
          const { reply, ...rest } = e;
          journal.keep({
            ...rest,
            status: 'error',
            error: `a reply of ${reply.length} characters, over the ${maxReplyChars} a journal keeps (--max-reply-bytes): asked again`,
          });
          journal.oversized++;
        } else journal.keep(e);
      } catch {
        // The last line of a killed run can be cut short; its request is simply asked again.
        journal.skipped++;
      }
    });
    journal.skipped += skipped;
    return journal;
  }

  /**
   * A journaled answer is never replaced: not by a later failure, not by a later answer (an old batch collected after
   * the run was answered online). Only a conflict (two different results for one request) takes its place.
   */
  private keep(e: JournalEntry): void {
    const old = this.entries.get(e.key);
    if (!e.conflict && old?.status === 'ok') return;
    if (old?.status === 'error' && old.usage) this.paidBefore.push(old);
    this.entries.set(e.key, e);
  }

  /** Every entry that was paid for: the latest per key, and the paid failures later entries replaced. */
  paid(): JournalEntry[] {
    return [...this.paidBefore, ...this.entries.values()];
  }

  get(key: string): JournalEntry | undefined {
    return this.entries.get(key);
  }

  get size(): number {
    return this.entries.size;
  }

  /** Every entry, the latest per key. */
  all(): JournalEntry[] {
    return [...this.entries.values()];
  }

  /** The tasks with an answer in the journal. */
  answeredTasks(): Set<string> {
    const out = new Set<string>();
    for (const e of this.entries.values()) if (e.status === 'ok') out.add(e.task);
    return out;
  }

  /**
   * Answers journaled by a version that kept no token counts where the server's were unreadable (`usageProblem`, no
   * `usage`) are given `estimate`'s, the one new answers get (./cost.ts, estimatedUsage), in memory only and still
   * flagged by their `usageProblem`: past spending (`llm.cost`, `--max-cost`) never counts them as free (#59 item 10).
   * Returns how many were estimated.
   */
  estimateUnreadUsage(estimate: (e: JournalEntry) => Usage | undefined): number {
    let n = 0;
    for (const [key, e] of this.entries) {
      if (e.status !== 'ok' || e.usage !== undefined || e.usageProblem === undefined) continue;
      const usage = estimate(e);
      if (!usage) continue;
      this.entries.set(key, { ...e, usage });
      n++;
    }
    return n;
  }

  /** Answers appended from now on are recorded as bought so (the run's way of sending: online, a batch, a file). */
  buyingAs(b: Bought): void {
    this.buying = b;
  }

  append(given: JournalEntry): void {
    const entry =
      this.buying && given.status === 'ok' && given.bought === undefined
        ? { ...given, bought: this.buying }
        : given;
    if (!this.repaired) {
      cutTornTail(this.file);
      this.repaired = true;
    }
    const raw = JSON.stringify(entry);
    const line = redactSecrets(raw);
    appendFileSync(this.file, `${line}\n`);
    // Kept as written: the run folder's other files (samples, predictions, summary) are made from these entries, so a
    // key a server echoed in a reply reaches none of them.
    this.keep(line === raw ? entry : (JSON.parse(line) as JournalEntry));
  }
}
