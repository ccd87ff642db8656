/**
 * A queued cell's run as the queue's database keeps it: what a run folder keeps in files (its answers, its batch
 * ledger, the money it spent and reserved), here rows of the cell, for every worker of the cell at once. A worker
 * opens one per job it processes and hands its parts to the engine's phases; the SQL of a cell's run lives here, not
 * in `Worker`.
 *
 * Money: a cell's `spent_usd` and `reserved_usd` (queue schema version 10). A reservation is one conditional UPDATE of
 * the cell's row, so that workers racing for the last dollars of a budget are ordered by the row's lock, and together
 * never reserve past it. A worker killed with requests in flight leaves their reservations counted: those requests
 * may well have been billed, and no one can learn what they cost.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { QueryResult, QueryResultRow } from 'pg';
import { cleanText } from '../data/clean-text.js';
import type { BatchLedger } from '../llm/batch.js';
import type { MoneyStore } from '../llm/budget.js';
import { inTransaction, type QueueDb, SCHEMA } from './store.js';

/** How the store queries: the worker's, which waits out an outage of the database. */
export type Query = <R extends QueryResultRow = QueryResultRow>(
  text: string,
  values?: unknown[],
) => Promise<QueryResult<R>>;

export interface CellStore {
  /** The cell's money: spent and reserved by every worker of the cell. */
  money: MoneyStore;
  /** The cell's batches, recorded the moment the provider names them. */
  batches: BatchLedger;
  /** The keys among `keys` that have an answer that is ok. */
  okKeys(keys: readonly string[]): Promise<Set<string>>;
  /**
   * What a job needs to start, in one read: its cell and plan, and which of its keys already have an answer that is
   * ok (a job released, lost or stopped before answered them: they are not asked again).
   */
  jobRow(keys: readonly string[]): Promise<JobRow | undefined>;
  /** The cell and its plan marked running, once, with the model's description. */
  started(described: unknown): Promise<void>;
  /** The cell's journal: every answer's entry (JSON) by its key. */
  answers(): Promise<Map<string, string>>;
  /** The cell done: its run folder's files (finished in `dir`) stored for `plan export`, its summary kept. */
  done(dir: string, summary: unknown): Promise<void>;
}

export interface JobRow {
  spec: string | null;
  status: string;
  in_flight: number;
  data_sha256: string;
  undescribed: boolean;
  plan_status: string;
  kind: string;
  answered: string[];
}

/** The store of cell `cell` of plan `plan`, read and written through `q`. */
export function cellStore(db: QueueDb, q: Query, plan: string, cell: string): CellStore {
  const money: MoneyStore = {
    async spent() {
      const { rows } = await q<{ spent: number }>(
        `SELECT spent_usd AS spent FROM ${SCHEMA}.cells WHERE plan_id = $1 AND cell_id = $2`,
        [plan, cell],
      );
      return rows[0]?.spent ?? 0;
    },
    async reserve(usd, max) {
      const { rowCount } = await q(
        `UPDATE ${SCHEMA}.cells SET reserved_usd = reserved_usd + $3
         WHERE plan_id = $1 AND cell_id = $2 AND spent_usd + reserved_usd + $3 <= $4 * (1 + 1e-12)`,
        [plan, cell, usd, max],
      );
      return rowCount === 1;
    },
    async settle(reserved, spent) {
      const { rows } = await q<{ spent: number }>(
        `UPDATE ${SCHEMA}.cells SET reserved_usd = greatest(0, reserved_usd - $3), spent_usd = spent_usd + $4
         WHERE plan_id = $1 AND cell_id = $2 RETURNING spent_usd AS spent`,
        [plan, cell, reserved, spent],
      );
      return rows[0]?.spent ?? spent;
    },
  };
  const batches: BatchLedger = {
    read: async () =>
      (
        await q<{ id: string; provider: string; keys: string; collected: boolean; tag: string | null }>(
          `SELECT b.id, b.provider, b.keys, b.collected, i.tag FROM ${SCHEMA}.batches b
             LEFT JOIN ${SCHEMA}.batch_intents i ON i.plan_id = b.plan_id AND i.cell_id = b.cell_id AND i.outcome = b.id
            WHERE b.plan_id = $1 AND b.cell_id = $2 ORDER BY b.submitted_at`,
          [plan, cell],
        )
      ).rows.map(({ tag, ...r }) => ({
        ...r,
        keys: JSON.parse(r.keys) as string[],
        ...(tag ? { tag } : {}),
      })),
    intents: async () =>
      (
        await q<{ tag: string; provider: string; keys: string; at: string }>(
          `SELECT tag, provider, keys, at FROM ${SCHEMA}.batch_intents WHERE plan_id = $1 AND cell_id = $2 AND outcome IS NULL ORDER BY at`,
          [plan, cell],
        )
      ).rows.map((r) => ({ ...r, keys: JSON.parse(r.keys) as string[] })),
    creating: async (i) => {
      await q(
        `INSERT INTO ${SCHEMA}.batch_intents (plan_id, cell_id, tag, provider, keys, at) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT DO NOTHING`,
        [plan, cell, i.tag, i.provider, JSON.stringify(i.keys), i.at],
      );
    },
    abandoned: async (tag) => {
      await q(
        `UPDATE ${SCHEMA}.batch_intents SET outcome = 'abandoned' WHERE plan_id = $1 AND cell_id = $2 AND tag = $3`,
        [plan, cell, tag],
      );
    },
    submitted: async (b) => {
      await inTransaction(db, async (client) => {
        await client.query(
          `INSERT INTO ${SCHEMA}.batches (plan_id, cell_id, id, provider, keys, input_file_id) VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT DO NOTHING`,
          [plan, cell, cleanText(b.id, 200), b.provider, JSON.stringify(b.keys), b.inputFileId ?? null],
        );
        if (b.tag)
          await client.query(
            `UPDATE ${SCHEMA}.batch_intents SET outcome = $4 WHERE plan_id = $1 AND cell_id = $2 AND tag = $3`,
            [plan, cell, b.tag, cleanText(b.id, 200)],
          );
      });
    },
    collected: async (b) => {
      await q(
        `UPDATE ${SCHEMA}.batches SET collected = true, status = $4, answered = $5 WHERE plan_id = $1 AND cell_id = $2 AND id = $3`,
        [plan, cell, b.id, cleanText(b.status, 40), b.answered],
      );
    },
    seen: async (state) => {
      const c = state.counts;
      await q(
        `UPDATE ${SCHEMA}.batches SET status = $4 WHERE plan_id = $1 AND cell_id = $2 AND id = $3 AND NOT collected`,
        [plan, cell, state.id, cleanText(c ? `${state.status} ${c.completed}/${c.total}` : state.status, 80)],
      );
    },
  };
  return {
    money,
    batches,
    async jobRow(keys) {
      const { rows } = await q<JobRow>(
        `SELECT c.spec, c.status, c.in_flight, c.data_sha256, c.described IS NULL AS undescribed, p.status AS plan_status,
           p.kind, ARRAY(SELECT a.key FROM ${SCHEMA}.answers a
             WHERE a.plan_id = $1 AND a.cell_id = $2 AND a.status = 'ok' AND a.key = ANY($3)) AS answered
         FROM ${SCHEMA}.cells c JOIN ${SCHEMA}.plans p ON p.id = c.plan_id WHERE c.plan_id = $1 AND c.cell_id = $2`,
        [plan, cell, keys],
      );
      return rows[0];
    },
    async started(described) {
      await q(
        `WITH c AS (UPDATE ${SCHEMA}.cells SET status = CASE WHEN status = 'queued' THEN 'running' ELSE status END,
           started_at = coalesce(started_at, now()), described = coalesce(described, $3)
         WHERE plan_id = $1 AND cell_id = $2)
         UPDATE ${SCHEMA}.plans SET status = 'running' WHERE id = $1 AND status = 'queued'`,
        [plan, cell, JSON.stringify(described)],
      );
    },
    async answers() {
      const { rows } = await q<{ key: string; entry: string }>(
        `SELECT key, entry FROM ${SCHEMA}.answers WHERE plan_id = $1 AND cell_id = $2`,
        [plan, cell],
      );
      return new Map(rows.map((r) => [r.key, r.entry]));
    },
    async done(dir, summary) {
      await inTransaction(db, async (client) => {
        for (const file of walk(dir))
          await client.query(
            `INSERT INTO ${SCHEMA}.files (plan_id, cell_id, path, content) VALUES ($1, $2, $3, $4)
             ON CONFLICT (plan_id, cell_id, path) DO UPDATE SET content = EXCLUDED.content`,
            [plan, cell, relative(dir, file), readFileSync(file)],
          );
        await client.query(
          `UPDATE ${SCHEMA}.cells SET status = 'done', summary = $3, error = NULL, finished_at = now() WHERE plan_id = $1 AND cell_id = $2`,
          [plan, cell, JSON.stringify(summary)],
        );
      });
    },
    async okKeys(keys) {
      const { rows } = await q<{ key: string }>(
        `SELECT key FROM ${SCHEMA}.answers WHERE plan_id = $1 AND cell_id = $2 AND status = 'ok' AND key = ANY($3)`,
        [plan, cell, keys],
      );
      return new Set(rows.map((r) => r.key));
    },
  };
}

/** A folder's files, in order, to store them. */
function walk(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else out.push(p);
  }
  return out;
}
