/** Runs the built `rumedbench` command as a user does, with the test data folder in its environment. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { CLI, DATA_DIR } from './data.js';

const exec = promisify(execFile);

export const CLI_ENV: NodeJS.ProcessEnv = { ...process.env, RUMEDBENCH_DATA: DATA_DIR ?? '' };

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Exit code and output; a failing command resolves too, with its code. */
export function rumedbench(...args: string[]): Promise<CliResult> {
  return rumedbenchWith({}, ...args);
}

/** The same, with more environment variables. */
export async function rumedbenchWith(env: NodeJS.ProcessEnv, ...args: string[]): Promise<CliResult> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [CLI, ...args], {
      env: { ...CLI_ENV, ...env },
      maxBuffer: 64 << 20,
    });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

/** For steps that must succeed: a non-zero exit fails the test with the command's stderr. */
export async function rumedbenchOk(...args: string[]): Promise<CliResult> {
  const r = await rumedbench(...args);
  if (r.code !== 0) throw new Error(`rumedbench ${args.join(' ')} exited ${r.code}:\n${r.stderr}`);
  return r;
}
