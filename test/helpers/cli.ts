/**
 * Runs `rumedbench` for the tests. Most tests call the CLI in process (`runCli`, its stdout, log and stderr
 * captured; the environment overlaid for the call), which is quick and shares the test's debugger; the tests that
 * kill the command, measure its memory or check the installed binary spawn the built CLI as a user does.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { runCli } from '../../src/cli/main.js';
import { createLogger } from '../../src/log.js';
import { CLI, DATA_DIR } from './data.js';

const exec = promisify(execFile);

export const CLI_ENV: NodeJS.ProcessEnv = { ...process.env, RUMEDBENCH_DATA: DATA_DIR ?? '' };

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Exit code and output; a failing command resolves too, with its code. */
export function rumedbench(...args: string[]): Promise<CliResult> {
  return rumedbenchWith({}, ...args);
}

// One in-process run at a time: each overlays process.env for its duration.
let queue: Promise<unknown> = Promise.resolve();

/** The same, with more environment variables (in process: set for the call, then restored). */
export function rumedbenchWith(env: NodeJS.ProcessEnv, ...args: string[]): Promise<CliResult> {
  const run = queue.then(async () => {
    const overlay = { RUMEDBENCH_DATA: DATA_DIR ?? '', ...env };
    const saved = Object.fromEntries(Object.keys(overlay).map((k) => [k, process.env[k]]));
    for (const [k, v] of Object.entries(overlay)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    let stdout = '';
    let stderr = '';
    try {
      const code = await runCli(args, {
        out: (t) => {
          stdout += t;
        },
        log: createLogger('info', (l) => {
          stderr += l;
        }),
        err: (t) => {
          stderr += t;
        },
      });
      return { code, stdout, stderr };
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });
  queue = run.catch(() => {});
  return run;
}

/** For steps that must succeed: a non-zero exit fails the test with the command's stderr. */
export async function rumedbenchOk(...args: string[]): Promise<CliResult> {
  return ok(args, await rumedbench(...args));
}

/** {@link rumedbenchOk} with more environment (a data folder of the test's own, say). */
export async function rumedbenchOkWith(env: NodeJS.ProcessEnv, ...args: string[]): Promise<CliResult> {
  return ok(args, await rumedbenchWith(env, ...args));
}

/** The built binary as a child process, as a user runs it. */
export async function rumedbenchProcess(...args: string[]): Promise<CliResult> {
  return rumedbenchProcessWith({}, ...args);
}

export async function rumedbenchProcessWith(env: NodeJS.ProcessEnv, ...args: string[]): Promise<CliResult> {
  return rumedbenchProcessFor(0, env, ...args);
}

/**
 * The built CLI in a child process, killed after `timeoutMs` (0: never): a process that hangs then fails its test
 * with what it printed, instead of running into the test's own timeout and saying nothing.
 */
export async function rumedbenchProcessFor(
  timeoutMs: number,
  env: NodeJS.ProcessEnv,
  ...args: string[]
): Promise<CliResult> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [CLI, ...args], {
      env: { ...CLI_ENV, ...env },
      maxBuffer: 64 << 20,
      timeout: timeoutMs,
    });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code: number | null; signal?: string; stdout: string; stderr: string };
    const killed = err.code === null ? `\n(killed by ${err.signal} after ${timeoutMs} ms)` : '';
    return { code: err.code ?? 124, stdout: err.stdout, stderr: `${err.stderr}${killed}` };
  }
}

export async function rumedbenchProcessOk(...args: string[]): Promise<CliResult> {
  return ok(args, await rumedbenchProcess(...args));
}

function ok(args: string[], r: CliResult): CliResult {
  if (r.code !== 0) throw new Error(`rumedbench ${args.join(' ')} exited ${r.code}:\n${r.stderr}`);
  return r;
}
