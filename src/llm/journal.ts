/**
 * The run journal: one JSON line per finished request, appended synchronously the moment its reply arrives, so a
 * run killed at any point (SIGKILL included) loses at most the requests in flight. Entries are keyed by the request
 * (messages and sampling parameters): a resumed run sends only what has no successful entry. Failures are journaled
 * too, for the record and for `--retry-errors`, but never stand in for an answer.
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import type { Usage } from './provider.js';

export interface JournalEntry {
  key: string;
  task: string;
  split: string;
  id: string;
  status: 'ok' | 'error';
  reply?: string;
  usage?: Usage;
  finishReason?: string;
  latencyMs: number;
  error?: string;
  at: string;
  /** Log-likelihood: per candidate, the summed log-probability (null: unscored) and its token count. */
  logprobs?: (number | null)[];
  tokens?: number[];
  /** Log-likelihood: positions the engine evaluated. */
  positions?: number;
}

export class Journal {
  /** Latest entry per key. */
  private readonly entries = new Map<string, JournalEntry>();

  constructor(private readonly file: string) {
    if (!existsSync(file)) return;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (line.trim() === '') continue;
      try {
        const e = JSON.parse(line) as JournalEntry;
        // A success is never overwritten by a later failure of the same request.
        if (e.status === 'ok' || this.entries.get(e.key)?.status !== 'ok') this.entries.set(e.key, e);
      } catch {
        // The last line of a killed run can be cut short; its request is simply asked again.
      }
    }
  }

  get(key: string): JournalEntry | undefined {
    return this.entries.get(key);
  }

  get size(): number {
    return this.entries.size;
  }

  append(entry: JournalEntry): void {
    appendFileSync(this.file, `${JSON.stringify(entry)}\n`);
    if (entry.status === 'ok' || this.entries.get(entry.key)?.status !== 'ok')
      this.entries.set(entry.key, entry);
  }
}
