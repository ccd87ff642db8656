/**
 * Queue workers for end-to-end tests: `rumedbench worker` processes of the built CLI (killed with real signals by
 * the tests), a look at the queue's database, and a wait for what it should come to.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import pg from 'pg';
import { afterEach } from 'vitest';
import { CLI } from './data.js';

export interface WorkerProcess {
  child: ChildProcess;
  name: string;
  /** How it ended, and when (ms since the epoch). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
  log: () => string;
}

const children: ChildProcess[] = [];
/** Every worker a test started and left running is killed after it. */
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** A worker process; `--allow-private` unless `publicOnly`: the fake model servers listen on loopback. */
export function startWorker(
  db: string,
  name: string,
  args: string[] = [],
  env: NodeJS.ProcessEnv = {},
  { publicOnly = false } = {},
): WorkerProcess {
  const child = spawn(
    process.execPath,
    [
      CLI,
      ...['worker', '--db', db, '--name', name, '--heartbeat', '1'],
      ...(publicOnly ? [] : ['--allow-private']),
      ...args,
    ],
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

export async function waitFor<T>(what: string, f: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One query of the queue's database, on a connection of its own. */
export async function query<T extends pg.QueryResultRow>(
  db: string,
  text: string,
  values: unknown[] = [],
): Promise<T[]> {
  const c = new pg.Client({ connectionString: db });
  await c.connect();
  try {
    return (await c.query<T>(text, values)).rows;
  } finally {
    await c.end();
  }
}
