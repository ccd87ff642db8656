/**
 * The built CLI (dist/bin/rumedbench.js) as a child process, as a user runs it: for the tests that kill the command,
 * measure its memory or check the installed binary. A test that imports this needs `npm run build` first
 * (test/needs-build.ts finds it by its import of `CLI`); ./cli.ts runs the CLI in process, with no build.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { CLI_ENV, type CliResult, ok } from './cli.js';
import { CLI } from './data.js';

const exec = promisify(execFile);

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
