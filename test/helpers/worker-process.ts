/**
 * Worker processes of the built CLI for end-to-end tests of the queue: started with a name and a one-second
 * heartbeat, their stderr kept, killed at the end of each test; and the waits and reads such tests share.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import pg from 'pg';
import { afterEach } from 'vitest';
import { CLI } from './data.js';

export interface WorkerProcess {
  child: ChildProcess;
  name: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
  log: () => string;
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** A worker process on `db` (with --allow-private: the fake model servers listen on loopback). */
export function spawnWorker(
  db: string,
  name: string,
  args: string[] = [],
  env: NodeJS.ProcessEnv = {},
): WorkerProcess {
  const child = spawn(
    process.execPath,
    [CLI, 'worker', '--db', db, '--name', name, '--heartbeat', '1', '--allow-private', ...args],
    { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  children.push(child);
  let log = '';
  child.stderr?.on('data', (d: Buffer) => {
    log += d.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() })),
  );
  return { child, name, exited, log: () => log };
}

/** Polls `f` every 50 ms until it gives a value. */
export async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One query on its own connection. */
export async function sql<T extends pg.QueryResultRow>(db: string, text: string, values: unknown[] = []) {
  const c = new pg.Client({ connectionString: db });
  await c.connect();
  try {
    return (await c.query<T>(text, values)).rows;
  } finally {
    await c.end();
  }
}
