/**
 * What every queue command shares: the `--db` flag and opening the queue. A module of its own so that the `worker`
 * command (./worker.ts) loads it without the other queue commands' modules.
 */
import { UsageError } from '../errors.js';
import type { OpenQueueOptions, QueueDb } from '../workers/store.js';
import * as flag from './flags.js';

export const dbFlag = () =>
  flag.text('--db <url>', "the queue's PostgreSQL (postgres://…; default: $DATABASE_URL)");

export async function withQueue<T>(
  url: string | undefined,
  f: (db: QueueDb) => Promise<T>,
  o: OpenQueueOptions = {},
): Promise<T> {
  const target = url ?? (process.env.DATABASE_URL || undefined);
  if (!target) throw new UsageError('--db postgres://… (or $DATABASE_URL): the queue lives in PostgreSQL');
  const db = await (await import('../workers/store.js')).openQueue(target, {
    appName: 'rumedbench-cli',
    ...o,
  });
  try {
    return await f(db);
  } finally {
    await db.close();
  }
}
