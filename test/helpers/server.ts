/** Starts `rumedbench serve` as a user does (the built CLI, a real port), for end-to-end tests and benchmarks. */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, DATA_DIR, REFERENCE_PREDICTIONS } from './data.js';

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  /** Everything it wrote to stderr so far. */
  log: () => string;
  stop: () => Promise<void>;
}

export const TEST_ADMIN_TOKEN = 'e2e-admin-Secret-4f7Kq9ZxL2mW8pR3';

export function startServe(args: string[], env: NodeJS.ProcessEnv = {}): Promise<ServerProcess> {
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', ...args], {
    env: {
      ...process.env,
      RUMEDBENCH_DATA: DATA_DIR ?? '',
      RUMEDBENCH_ADMIN_TOKEN: TEST_ADMIN_TOKEN,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start in 30 s:\n${err}`)), 30_000);
    child.stderr?.on('data', (d: Buffer) => {
      err += d.toString();
      const m = /leaderboard on (http:\/\/\S+)/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve({
          url: m[1] as string,
          child,
          log: () => err,
          stop: () =>
            new Promise<void>((done) => {
              if (child.exitCode !== null || child.signalCode !== null) return done();
              child.once('exit', () => done());
              child.kill('SIGTERM');
            }),
        });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code} before it started:\n${err}`));
    });
  });
}

/**
 * Asks `read` again until `done` holds of its answer, and returns that answer: for what a server shows only once it
 * has looked at the database again (a change made by another process). Fails after `deadlineMs` with the last answer.
 */
export async function eventually<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  deadlineMs = 30_000,
): Promise<T> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > end)
      throw new Error(`not so within ${deadlineMs} ms; the last answer: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A multipart upload through a real HTTP client. */
export async function uploadTo(
  url: string,
  files: { name: string; data: Uint8Array | string }[],
  fields: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const fd = new FormData();
  for (const f of files) fd.append('file', new Blob([f.data]), f.name);
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  const res = await fetch(`${url}/api/submissions`, { method: 'POST', body: fd, headers });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** The five public tasks' files of one of upstream's reference folders (`bilstm`, `linear_models`, …), for uploadTo. */
export function referenceFiles(folder: string): { name: string; data: Uint8Array }[] {
  return ['RuMedTop3', 'RuMedSymptomRec', 'RuMedDaNet', 'RuMedNLI', 'RuMedNER'].map((t) => ({
    name: `${t}.jsonl`,
    data: readFileSync(join(REFERENCE_PREDICTIONS as string, folder, `${t}.jsonl`)),
  }));
}
