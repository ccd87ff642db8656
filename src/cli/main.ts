#!/usr/bin/env node
/**
 * The `rumedbench` entry. `rumedbench version` (and `--version`, `-V`) is answered here, before the command tree and
 * its parser are loaded: a script that checks the version pays little more than Node's own start. Every other command
 * goes to ./program.ts.
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { CliIo } from './io.js';
import { failIfUnfinished } from './pending-exit.js';

/** Runs the CLI on `argv` (without `node` and the script); resolves to the exit status. */
export async function runCli(argv: readonly string[], io?: Partial<CliIo>): Promise<number> {
  const { runCli: run } = await import('./program.js');
  return run(argv, io);
}

function isMain(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

const VERSION_ARGS = new Set(['version', '--version', '-V']);

if (isMain()) {
  const argv = process.argv.slice(2);
  const answered =
    argv.length === 1 && VERSION_ARGS.has(argv[0] as string)
      ? import('../version.js').then(({ VERSION }) => {
          process.stdout.write(`${VERSION}\n`);
          return 0;
        })
      : runCli(argv);
  failIfUnfinished(answered, (t) => process.stderr.write(t));
  answered.then(
    (code) => {
      process.exitCode = code;
    },
    (e: unknown) => {
      process.stderr.write(
        `rumedbench: internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`,
      );
      process.exitCode = 70;
    },
  );
}
