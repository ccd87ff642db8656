/**
 * The `rumedbench` command tree (./main.ts is its entry). Each command parses its flags and calls one typed function
 * of the library; errors a user can cause are printed as one line and set the exit status (2 for usage, 1 for a
 * failing submission).
 */
import { Command, CommanderError } from 'commander';
import { checkProxySettings, proxyUrl } from '../data/proxy.js';
import { RumedbenchError, UsageError } from '../errors.js';
import { createLogger } from '../log.js';
import { VERSION } from '../version.js';
import { COMMANDS, type CommandEntry, type Loaded } from './commands.js';
import { addFlags } from './flags.js';
import { type CliIo, EXIT, exitCodeOf, writeRefusal } from './io.js';
import { checkOutFolder } from './out-folder.js';

const PROXY_VARIABLES = ['https_proxy', 'HTTPS_PROXY', 'http_proxy', 'HTTP_PROXY'] as const;
let savedProxy: Record<string, string | undefined> | undefined;

/**
 * `--proxy URL`: this command's requests through it, as if HTTPS_PROXY and HTTP_PROXY were set (in the environment, so
 * that the worker threads and processes the command starts see it too); undone when the command ends, for the
 * in-process callers of runCli. A URL the transport could not use is refused here, before anything is sent.
 */
function useProxy(url: string): void {
  proxyUrl(url, '--proxy');
  savedProxy ??= Object.fromEntries(PROXY_VARIABLES.map((k) => [k, process.env[k]]));
  for (const k of PROXY_VARIABLES) process.env[k] = url;
}

function restoreProxy(): void {
  if (!savedProxy) return;
  for (const [k, v] of Object.entries(savedProxy))
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  savedProxy = undefined;
}

const keyOf = (e: CommandEntry) => e.path.join(' ');

/**
 * The commands' modules that `argv` can reach: those under its first word (all of them for `all`). A command
 * loads only its own modules; `--help` and `--version` load none.
 */
export async function loadCommands(argv: readonly string[] | 'all'): Promise<Map<string, Loaded>> {
  const first = argv === 'all' ? undefined : argv.find((a) => !a.startsWith('-'));
  const wanted = COMMANDS.filter((e) => e.load && (argv === 'all' || e.path[0] === first));
  const loaded = await Promise.all(
    wanted.map(async (e) => [keyOf(e), await (e.load as () => Promise<Loaded>)()] as const),
  );
  return new Map(loaded);
}

/**
 * The command tree. Every command is there (for help and for commander's "unknown command"); those in `loaded`
 * also have their flags and their action.
 */
export function buildProgram(
  io: CliIo,
  setExit: (code: number) => void,
  loaded: ReadonlyMap<string, Loaded> = new Map(),
  /** Filled with the command's --out, for an error that names no path (a write to a full disk through a descriptor). */
  given: { out?: string } = {},
): Command {
  const program = new Command('rumedbench')
    // `serve --db X` and `serve token create --db Y` both take --db: an option belongs to the command it follows.
    .enablePositionalOptions()
    .description('RuMedBench: the Russian medical language-understanding benchmark')
    .version(VERSION)
    .showHelpAfterError()
    .exitOverride()
    // Set before the commands are made, which inherit it: help to stdout, usage errors to stderr, both through io.
    .configureOutput({
      writeOut: (t) => io.out(t),
      writeErr: (t) => (io.err ?? ((x: string) => process.stderr.write(x)))(t),
    });
  // One --quiet and one --tasks-dir for every command (addFlags declares them on each).
  program.hook('preAction', async (_, action) => {
    if (action.getOptionValue('quiet') === true) {
      io.quiet = true;
      io.log = { ...io.log, info: () => {}, debug: () => {} };
    }
    const proxy = action.getOptionValue('proxy') as string | undefined;
    if (proxy !== undefined) useProxy(proxy);
    // In the commands that send requests (those with --proxy), before anything is sent: a setting nothing can use
    // would otherwise fail each request, retried. The others never read it.
    if (action.options.some((o) => o.long === '--proxy')) checkProxySettings();
    const dirs = (action.getOptionValue('tasksDir') as string[] | undefined) ?? [];
    // Loaded only where asked for: the YAML reader is not part of every command's start.
    if (dirs.length > 0 || process.env.RUMEDBENCH_TASKS) {
      const { taskPaths, loadUserTasks } = await import('../tasks/user.js');
      loadUserTasks(taskPaths(dirs));
    }
  });
  const made = new Map<string, Command>([['', program]]);
  for (const e of COMMANDS) {
    const parent = made.get(e.path.slice(0, -1).join(' ')) as Command;
    const cmd = parent.command(e.path.at(-1) as string).description(e.description);
    for (const [name, what] of e.args ?? []) cmd.argument(name, what);
    made.set(keyOf(e), cmd);
    const m = loaded.get(keyOf(e));
    if (!m) continue;
    const n = e.args?.length ?? 0;
    addFlags(cmd, m.flags).action(async (...a: unknown[]) => {
      const args = a.slice(0, n).flatMap((x) => (Array.isArray(x) ? (x as string[]) : [x as string]));
      // An --out that cannot be made is refused here, once for every command, before the command does anything.
      const out = (a[n] as { out?: unknown } | undefined)?.out;
      if (typeof out === 'string') {
        given.out = out;
        checkOutFolder(e.path.join(' '), out);
      }
      setExit((await m.run(args, a[n], io)) ?? EXIT.ok);
    });
  }
  return program;
}

/** Every command with its flags (the CLI reference, and tests that walk the tree). */
export async function buildFullProgram(io: CliIo, setExit: (code: number) => void): Promise<Command> {
  return buildProgram(io, setExit, await loadCommands('all'));
}

/** Runs the CLI on `argv` (without `node` and the script); resolves to the exit status. */
export async function runCli(argv: readonly string[], io?: Partial<CliIo>): Promise<number> {
  const full: CliIo = {
    out: io?.out ?? ((t) => process.stdout.write(t)),
    log: io?.log ?? createLogger('info'),
    err: io?.err ?? ((t) => process.stderr.write(t)),
  };
  let code: number = EXIT.ok;
  const given: { out?: string } = {};
  const program = buildProgram(
    full,
    (c) => {
      code = c;
    },
    await loadCommands(argv),
    given,
  );
  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (e) {
    if (e instanceof CommanderError) {
      // --help and --version end here too, with exit code 0.
      return e.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (e instanceof UsageError) {
      full.log.error(e.message);
      return EXIT.usage;
    }
    if (e instanceof RumedbenchError) {
      full.log.error(e.message);
      return exitCodeOf(e);
    }
    // An --out it cannot write to (read-only, full, a file): what and where, not a stack trace.
    const refused = writeRefusal(e);
    if (refused) {
      full.log.error(
        `cannot write ${refused.path ?? (given.out !== undefined ? `into ${given.out}` : 'the output')}: ${refused.why}; ${refused.full ? 'free some space, or choose another --out' : 'choose another --out, or make it writable'}`,
      );
      return refused.full ? EXIT.submissionErrors : EXIT.usage;
    }
    throw e;
  } finally {
    restoreProxy();
  }
  return code;
}
