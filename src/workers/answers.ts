/**
 * A worker's answers on their way to the database, written in batches: every answer that arrives while a write is
 * on its way goes into the next one, one multi-row INSERT per tick (ANSWER_TICK_MS) instead of a round trip per
 * answer. Invariant: an answer's promise resolves only once its row has landed, so a job counts as done only after
 * every one of its answers is in the database, and an answer that was ok is never overwritten.
 */
import { cleanDeep } from '../data/clean-text.js';
import type { JournalEntry } from '../llm/journal.js';
import { SCHEMA } from './store.js';

/** How long an answer waits for others to share its INSERT; while a write is on its way, the next waits for it. */
export const ANSWER_TICK_MS = 10;
/** Rows in one INSERT at most. */
const MAX_ROWS = 500;

export interface AnswerRow {
  plan: string;
  cell: string;
  entry: JournalEntry;
  worker: string;
}

interface Pending extends AnswerRow {
  resolve(): void;
  reject(e: unknown): void;
}

/**
 * The batch as one statement: arrays unnested into rows. A key answered twice in one batch (two identical items)
 * goes into the next batch: ON CONFLICT may touch a row once per statement.
 */
const INSERT = `INSERT INTO ${SCHEMA}.answers (plan_id, cell_id, key, status, entry, worker)
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
  ON CONFLICT (plan_id, cell_id, key) DO UPDATE
    SET status = EXCLUDED.status, entry = EXCLUDED.entry, worker = EXCLUDED.worker, asked = ${SCHEMA}.answers.asked + 1, at = now()
    WHERE ${SCHEMA}.answers.status <> 'ok'`;

export class AnswerWriter {
  private queue: Pending[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writing = false;
  /** Statements sent, for tests and the closing line. */
  statements = 0;

  /**
   * `query` sends one statement (waiting out an outage); `refused` tells an error about the data sent (then each
   * row of the batch is written alone, so that only the row the database refuses fails).
   */
  constructor(
    private readonly query: (text: string, values: unknown[]) => Promise<unknown>,
    private readonly refused: (e: unknown) => boolean,
    private readonly tickMs = ANSWER_TICK_MS,
  ) {}

  /** Resolves once the answer is in the database; an earlier answer that is ok is kept. */
  write(row: AnswerRow): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ ...row, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.writing || this.timer || this.queue.length === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.tickMs);
  }

  private async flush(): Promise<void> {
    const batch: Pending[] = [];
    const rest: Pending[] = [];
    const seen = new Set<string>();
    for (const p of this.queue) {
      const id = `${p.plan}\n${p.cell}\n${p.entry.key}`;
      if (batch.length >= MAX_ROWS || seen.has(id)) rest.push(p);
      else {
        seen.add(id);
        batch.push(p);
      }
    }
    this.queue = rest;
    this.writing = true;
    try {
      await this.send(batch);
      for (const p of batch) p.resolve();
    } catch (e) {
      if (batch.length > 1 && this.refused(e))
        // One row the database refuses (bad data) fails alone; the others land.
        for (const p of batch)
          await this.send([p]).then(
            () => p.resolve(),
            (e1: unknown) => p.reject(e1),
          );
      else for (const p of batch) p.reject(e);
    } finally {
      this.writing = false;
    }
    // What arrived meanwhile goes at once: it has waited for this write already.
    if (this.queue.length > 0) void this.flush();
  }

  private async send(batch: readonly Pending[]): Promise<void> {
    this.statements++;
    await this.query(INSERT, [
      batch.map((p) => p.plan),
      batch.map((p) => p.cell),
      batch.map((p) => p.entry.key),
      batch.map((p) => p.entry.status),
      batch.map((p) => JSON.stringify(cleanDeep(p.entry))),
      batch.map((p) => p.worker),
    ]);
  }
}
