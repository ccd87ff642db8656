/**
 * Runs `rumedbench` for the tests, in process (`runCli`, its stdout, log and stderr captured; the environment
 * overlaid for the call), which is quick, shares the test's debugger and needs no build. The tests that kill the
 * command, measure its memory or check the installed binary spawn the built CLI as a user does: ./cli-process.ts.
 */
import { runCli } from '../../src/cli/main.js';
import { createLogger } from '../../src/log.js';
import { DATA_DIR } from './data.js';

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

export function ok(args: string[], r: CliResult): CliResult {
  if (r.code !== 0) throw new Error(`rumedbench ${args.join(' ')} exited ${r.code}:\n${r.stderr}`);
  return r;
}
