/**
 * A worker's answers on their way to the database, written in batches: one multi-row INSERT carries every answer
 * that waited for it, sent once `flushRows` answers wait (half the worker's request slots: no request goes out while
 * as many answers as slots are unwritten, so a batch must land before the other half fills), once the oldest has waited
 * ANSWER_WAIT_MS, or at once when a job has sent its last request (`flushNow`); while a write is on its way, the next
 * waits for it. Invariant: an answer's promise resolves only once its row has landed, so a job counts as done only
 * after every one of its answers is in the database, and an answer that was ok is never overwritten.
 */
import { storableJson } from '../data/clean-text.js';
import type { JournalEntry } from '../llm/journal.js';
import { SCHEMA } from './store.js';

/**
 * How long an answer waits at most for others to share its INSERT. Longer than a round trip to the database, so
 * that a worker's answers go several to a statement (#64: at 10 ms, 3.4 rows a statement at one worker), and well
 * under a model's answer, so that an answer's wait rarely holds a request back.
 */
export const ANSWER_WAIT_MS = 40;
/** Rows in one INSERT at most. */
const MAX_ROWS = 500;

export interface AnswerRow {
  plan: string;
  cell: string;
  entry: JournalEntry;
  worker: string;
}

export interface AnswerWriterOptions {
  /** The longest an answer waits for others (default ANSWER_WAIT_MS). */
  waitMs?: number;
  /** A batch goes as soon as this many answers wait (the worker's request slots; default: only the wait counts). */
  flushRows?: number;
}

interface Pending extends AnswerRow {
  /** When it was written (performance.now()). */
  at: number;
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
  /** A job sent its last request while a write was on its way: what waits goes as soon as that write lands. */
  private hurry = false;
  private readonly waitMs: number;
  private readonly flushRows: number;
  /** Statements sent, for tests and the closing line. */
  statements = 0;

  /**
   * `query` sends one statement (waiting out an outage); `refused` tells an error about the data sent (then each
   * row of the batch is written alone, so that only the row the database refuses fails).
   */
  constructor(
    private readonly query: (text: string, values: unknown[]) => Promise<unknown>,
    private readonly refused: (e: unknown) => boolean,
    o: AnswerWriterOptions = {},
  ) {
    this.waitMs = o.waitMs ?? ANSWER_WAIT_MS;
    this.flushRows = Math.max(1, o.flushRows ?? MAX_ROWS);
  }

  /** Resolves once the answer is in the database; an earlier answer that is ok is kept. */
  write(row: AnswerRow): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ ...row, at: performance.now(), resolve, reject });
      this.schedule();
    });
  }

  /** A job sent its last request: its answers waiting for others go now (it is done once they land). */
  flushNow(): void {
    if (this.queue.length === 0) return;
    if (this.writing) {
      this.hurry = true;
      return;
    }
    this.go();
  }

  /** The batch goes now when enough answers wait (or the oldest waited long enough), else when the oldest has. */
  private schedule(): void {
    if (this.writing || this.queue.length === 0) return;
    const waited = performance.now() - (this.queue[0] as Pending).at;
    if (this.queue.length >= this.flushRows || waited >= this.waitMs) {
      this.go();
      return;
    }
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      this.schedule();
    }, this.waitMs - waited);
  }

  private go(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    void this.flush();
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
    // What arrived meanwhile goes at once if a job waits for it, else by the same rule as ever.
    if (this.hurry && this.queue.length > 0) {
      this.hurry = false;
      this.go();
    } else {
      this.hurry = false;
      this.schedule();
    }
  }

  private async send(batch: readonly Pending[]): Promise<void> {
    this.statements++;
    await this.query(INSERT, [
      batch.map((p) => p.plan),
      batch.map((p) => p.cell),
      batch.map((p) => p.entry.key),
      batch.map((p) => p.entry.status),
      batch.map((p) => storableJson(p.entry)),
      batch.map((p) => p.worker),
    ]);
  }
}
