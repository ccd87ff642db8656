/**
 * Flags declared once, as typed tables (vitest's `cli-config.ts` is the model): a command module declares its
 * table, `addFlags` registers it with commander, and the command's flag type is inferred from the table
 * (`FlagsOf<typeof TABLE>`), never kept by hand beside it. A flag with a default, or required, is always there; any
 * other may be undefined. Every value is parsed and checked when the command line is read, before any work starts.
 */
import { type Command, Option } from 'commander';
import { UsageError } from '../errors.js';
import { parseCount } from './options.js';

interface Spec<T> {
  /** `--name <value>`, `--name` (a switch) or `--no-name` (on unless given). */
  flag: string;
  description: string;
  default?: T;
  parse?: (value: string, previous: T) => T;
  choices?: readonly string[];
  required?: boolean;
  /** Also `--no-<name>`, with this description: the value is then `false`. */
  off?: string;
}
/** A flag that always has a value (a default, or required). */
export interface Always<T> extends Spec<T> {
  readonly always: true;
}
/** A flag that may be absent. */
export interface Maybe<T> extends Spec<T> {
  readonly always: false;
}
export type Flag<T> = Always<T> | Maybe<T>;
// biome-ignore lint/suspicious/noExplicitAny: a table holds flags of any value type
export type FlagTable = Record<string, Flag<any>>;
export type FlagsOf<T extends FlagTable> = {
  [K in keyof T]: T[K] extends Always<infer V> ? V : T[K] extends Maybe<infer V> ? V | undefined : never;
};

// Parsers throw a UsageError saying what they expected; runCli prints it and exits 2.
/** The flag's value as text. */
export function text(flag: string, description: string): Maybe<string>;
export function text(
  flag: string,
  description: string,
  o: { default: string } | { required: true },
): Always<string>;
export function text(
  flag: string,
  description: string,
  o: { default?: string; required?: true } = {},
): Flag<string> {
  return { flag, description, ...o, always: (o.default !== undefined || o.required === true) as never };
}

/** A whole number at least `min`. */
export function count(flag: string, description: string, o: { min: number }): Maybe<number>;
export function count(flag: string, description: string, o: { min: number; default: number }): Always<number>;
export function count(flag: string, description: string, o: { min: number; default?: number }): Flag<number> {
  const parse = parseCount(flag.split(' ')[0] as string, o.min);
  return {
    flag,
    description,
    parse,
    ...(o.default !== undefined ? { default: o.default } : {}),
    always: (o.default !== undefined) as never,
  };
}

/** A number ≥ 0 (a temperature, a price). */
export function decimal(flag: string, description: string): Maybe<number>;
export function decimal(flag: string, description: string, o: { default: number }): Always<number>;
export function decimal(flag: string, description: string, o: { default?: number } = {}): Flag<number> {
  const name = flag.split(' ')[0] as string;
  const parse = (v: string) => {
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n) || n < 0)
      throw new UsageError(`${name} must be a number ≥ 0, got "${v}"`);
    return n;
  };
  return { flag, description, parse, ...o, always: (o.default !== undefined) as never };
}

/** One of a few words. */
export function choice<const C extends string>(
  flag: string,
  description: string,
  choices: readonly C[],
  o: { default: C },
): Always<C>;
export function choice<const C extends string>(
  flag: string,
  description: string,
  choices: readonly C[],
): Maybe<C>;
export function choice<const C extends string>(
  flag: string,
  description: string,
  choices: readonly C[],
  o: { default?: C } = {},
): Flag<C> {
  return { flag, description, choices, ...o, always: (o.default !== undefined) as never };
}

/** A value, or `--no-<name>` to turn the thing off (`false`). */
export function textOrOff(flag: string, description: string, off: string): Maybe<string | false> {
  return { flag, description, off, always: false };
}

/** A switch: `--name` sets it; `--no-name` declares one that is on unless given. */
export function on(flag: string, description: string): Always<boolean> {
  return { flag, description, default: flag.startsWith('--no-'), always: true };
}

/** Repeatable: every value given, in order. */
export function many(flag: string, description: string): Always<string[]> {
  return { flag, description, default: [], parse: (v, prev) => [...(prev ?? []), v], always: true };
}

/** Any other value, parsed by `parse` (which throws a UsageError saying what it expected). */
export function custom<T>(flag: string, description: string, parse: (v: string) => T): Maybe<T>;
export function custom<T>(
  flag: string,
  description: string,
  parse: (v: string) => T,
  o: { default: T },
): Always<T>;
export function custom<T>(
  flag: string,
  description: string,
  parse: (v: string) => T,
  o: { default?: T } = {},
): Flag<T> {
  return { flag, description, parse, ...o, always: (o.default !== undefined) as never };
}

// Flags several commands share, each a new spec (commander keeps state on its options).
export const dataFlag = () =>
  text('--data <dir>', 'data folder (default: $RUMEDBENCH_DATA, else the user cache folder)');
/** Read by the program's hook (program.ts): this command's requests through this proxy. */
export const proxyFlag = () =>
  text(
    '--proxy <url>',
    "the proxy for this command's requests, http:// and https:// alike (instead of HTTPS_PROXY/HTTP_PROXY; NO_PROXY still applies)",
  );
export const tasksFlag = () => text('--tasks <list>', 'comma-separated task names (default: all)');
export const bootstrapFlag = (what = 'bootstrap resamples, 0 for none') =>
  count('--bootstrap <n>', what, { min: 0, default: 1000 });
export const seedFlag = (what = 'seed of the resampling') =>
  count('--seed <n>', what, { min: 0, default: 0 });
export const jsonFlag = (what = 'print exactly one JSON object on stdout') => on('--json', what);
export const goldDirFlag = () =>
  text(
    '--gold <dir>',
    'folder of gold files (<Task>.jsonl: ids and the gold field) held apart from the data: the gold of the split scored (private test sets, closed tests, ECG2Pathology); the data need not carry it, and a run never copies it',
  );
export const fileGoldFlag = () =>
  on(
    '--file-gold',
    'score RuMedBench-format files on the gold they carry, without checking ids against the data (as upstream eval.py)',
  );

/**
 * Registers a table on a command, with the `--quiet` every command takes; a key that is not the flag's own
 * camel-cased name is a bug, caught here.
 */
export function addFlags(cmd: Command, table: FlagTable): Command {
  // Switches and repeatable flags start off and empty; said in help only where it says something.
  const quiet: [string, unknown][] = [];
  for (const [key, spec] of Object.entries(table)) {
    const option = new Option(spec.flag, spec.description);
    if (option.attributeName() !== key)
      throw new Error(
        `flag table of ${cmd.name()}: "${key}" is named "${option.attributeName()}" by ${spec.flag}`,
      );
    if (spec.choices) option.choices(spec.choices);
    if (spec.parse) option.argParser(spec.parse);
    const d = spec.default;
    if (typeof d === 'boolean' || (Array.isArray(d) && d.length === 0)) {
      if (!spec.flag.startsWith('--no-')) quiet.push([key, d]);
    } else if (d !== undefined) option.default(d);
    if (spec.required) option.makeOptionMandatory();
    cmd.addOption(option);
    if (spec.off) cmd.addOption(new Option(`--no-${option.name()}`, spec.off));
  }
  // Every command's --quiet: the program's hook quietens the command's logger (see main.ts).
  if (!cmd.options.some((o) => o.long === '--quiet'))
    cmd.addOption(new Option('-q, --quiet', 'only warnings and errors on stderr: no progress, no notes'));
  // Every command's --tasks-dir: the program's hook loads the definitions before the command runs (see main.ts).
  if (!cmd.options.some((o) => o.long === '--tasks-dir')) {
    cmd.addOption(
      new Option(
        '--tasks-dir <path>',
        'task definition file or folder of them, or a shipped task by name (ECG2Pathology) (repeatable; also RUMEDBENCH_TASKS)',
      ).argParser((v: string, prev: string[] | undefined) => [...(prev ?? []), v]),
    );
  }
  cmd.hook('preAction', (_, action) => {
    for (const [key, d] of quiet) if (action.getOptionValue(key) === undefined) action.setOptionValue(key, d);
  });
  return cmd;
}
