/**
 * A cell's money in the queue's database: reservations racing from many connections at once (as many workers' are)
 * never pass the budget together, and what is settled is kept for whoever looks next. And the rule every door spends
 * by (../llm/budget.ts), on a run folder's money kept in memory.
 */
import { describe, expect, it } from 'vitest';
import { freshDatabase, NO_PG_REASON, PG_URL } from '../../test/helpers/engines.js';
import { memoryMoney } from '../llm/budget.js';
import { cellStore } from './queue-store.js';
import { openQueue, SCHEMA } from './store.js';

describe('memoryMoney: a run folder’s money', () => {
  it('reserves while spent, reserved and the request fit the budget; settling frees the reservation', async () => {
    const m = memoryMoney(0.25);
    expect(await m.reserve(0.5, 1)).toBe(true);
    expect(await m.reserve(0.3, 1)).toBe(false);
    expect(await m.settle(0.5, 0.1)).toBeCloseTo(0.35, 12);
    expect(await m.reserve(0.6, 1)).toBe(true);
    expect(await m.reserve(0.06, 1)).toBe(false);
    expect(await m.spent()).toBeCloseTo(0.35, 12);
  });
});

describe.skipIf(!PG_URL)(
  `a cell's money in the queue (PostgreSQL${PG_URL ? '' : `: skipped, ${NO_PG_REASON}`})`,
  () => {
    it('200 reservations at once over the pool’s connections: exactly as many as the budget holds are granted', async () => {
      const url = await freshDatabase('postgres');
      const first = await openQueue(url);
      try {
        await first.pool.query(
          `INSERT INTO ${SCHEMA}.plans (id, name, plan_file, plan_sha256, status, max_in_flight) VALUES ('p', 'p', 'f', 's', 'running', 8)`,
        );
        await first.pool.query(
          `INSERT INTO ${SCHEMA}.cells (plan_id, cell_id, position, model, provider, axes, settings, endpoint, queue, in_flight, total, data_sha256, status)
           VALUES ('p', 'm/default', 0, 'm', 'openai', '{}', '{}', 'e', 'q', 8, 200, '{}', 'running')`,
        );
        // Stores of several workers, their queries on as many connections of the pool as it opens at once (10).
        const stores = Array.from({ length: 8 }, () =>
          cellStore(first, (text, values) => first.pool.query(text, values), 'p', 'm/default'),
        );
        // Each request's ceiling is $0.01; the budget holds 37 of them after $0.63 already spent.
        await stores[0]?.money.settle(0, 0.63);
        const granted = await Promise.all(
          Array.from({ length: 200 }, (_, i) => stores[i % stores.length]?.money.reserve(0.01, 1)),
        );
        expect(granted.filter(Boolean)).toHaveLength(37);
        const { rows } = await first.pool.query<{ spent: number; reserved: number }>(
          `SELECT spent_usd AS spent, reserved_usd AS reserved FROM ${SCHEMA}.cells WHERE plan_id = 'p'`,
        );
        expect(rows[0]?.spent).toBeCloseTo(0.63, 12);
        expect(rows[0]?.reserved).toBeCloseTo(0.37, 12);
        // An answer that cost ten times its ceiling: settled, the cell has spent past what anyone may reserve.
        expect(await stores[3]?.money.settle(0.01, 0.1)).toBeCloseTo(0.73, 12);
        expect(await stores[5]?.money.reserve(0.01, 1)).toBe(false);
        expect(await stores[7]?.money.spent()).toBeCloseTo(0.73, 12);
      } finally {
        await first.close();
      }
    });
  },
);
