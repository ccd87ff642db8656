/**
 * Flags declared once, as typed tables (vitest's `cli-config.ts` is the model): a command declares its table of
 * flags, each with its parser and default, and the command's flag type is inferred from the table
 * (`FlagsOf<typeof TABLE>`), never kept by hand beside it. A flag with a default, or required, is always there; any
 * other may be undefined. Every value is parsed and checked when the command line is read, before any work starts.
 *
 * A flag that fills a field of the run spec says which one (`to`), once: the spec made from the flags
 * (`specInputOf`), the command line written back from a spec (`flagWordsOf`), a plan's short forms (`planValueOf`) and
 * the flags named in a spec's problems (`inFlagWords`) are all read from that one binding. The tables live here, in
 * the engine, because the engine writes the command line into each manifest; `src/cli/flags.ts` registers them
 * with commander.
 */
import { RunSpecError, UsageError } from '../errors.js';
import { makeRunSpec, RUN_SPEC_SCHEMA, type RunSpec } from './spec.js';

/** A whole number at least `min`, or a UsageError naming the flag. */
export function parseCount(name: string, min: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min)
      throw new UsageError(`${name} must be an integer ≥ ${min}, got "${value}"`);
    return n;
  };
}

/** How a flag fills a field of the run spec, and how the field is written back as the flag. */
export interface FieldBinding<T> {
  /** The field: `max_tokens`, `provider.base_url`, `prices.prompt`. */
  path: string;
  /** The field's value from the flag's (default: the same); `flags` are all the command's, for a value that needs another. */
  toField?: (value: T, flags: Readonly<Record<string, unknown>>) => unknown;
  /** The flag's values for the field's (default: the value, or each item of a list, as text). */
  toValues?: (field: never) => string[];
  /**
   * Only these kinds take it: an LLM run's provider, a baseline's method (default: every one). A function is asked
   * each time, so that it reads the registry as it stands (a provider registered at run time).
   */
  only?: readonly string[] | ((kind: string) => boolean);
  /** Why a spec's value cannot be written back as this flag (a file read into the spec): the command line names it. */
  notWritten?: string;
  /** Written on a command line even at its default (the provider: a line says whom it asks). */
  writtenAtDefault?: true;
  /** A path, made absolute by `toField` from the working folder; a plan reads it from the plan file's folder instead. */
  isPath?: true;
}

export interface Spec<T> {
  /** `--name <value>`, `--name` (a switch) or `--no-name` (on unless given). */
  flag: string;
  /** What it does; a function for text read from a registry when the command is parsed (`--provider`'s). */
  description: string | (() => string);
  default?: T;
  parse?: (value: string, previous: T) => T;
  /** The words it takes; a function for a list read from a registry when the command is parsed. */
  choices?: readonly string[] | (() => readonly string[]);
  required?: boolean;
  /** Also `--no-<name>`, with this description: the value is then `false`. */
  off?: string;
  /** The run spec's field the flag fills (see `to`); absent for a flag that steers the command, not the run. */
  field?: FieldBinding<T>;
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

/** One of a few words: a list, or a function that reads them (a registry) when the command is parsed. */
export function choice<const C extends string>(
  flag: string,
  description: string | (() => string),
  choices: readonly C[] | (() => readonly C[]),
  o: { default: C },
): Always<C>;
export function choice<const C extends string>(
  flag: string,
  description: string | (() => string),
  choices: readonly C[] | (() => readonly C[]),
): Maybe<C>;
export function choice<const C extends string>(
  flag: string,
  description: string | (() => string),
  choices: readonly C[] | (() => readonly C[]),
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

/** `spec` bound to the run spec's field `path`: the one place that says which field a flag fills, and how. */
// biome-ignore lint/suspicious/noExplicitAny: a binding takes a flag of any value type
export function to<F extends Flag<any>>(
  path: string,
  spec: F,
  how: Omit<FieldBinding<F extends Flag<infer T> ? T : never>, 'path'> = {},
): F {
  return { ...spec, field: { path, ...how } as FieldBinding<never> };
}

/** `--max-tokens` of `--max-tokens <n>`. */
export const flagNameOf = (spec: Spec<unknown>) => spec.flag.split(' ')[0] as string;

const isSwitch = (spec: Spec<unknown>) => !spec.flag.includes('<');

/** A flag's words as they stand now (a registry's, for a function). */
export const choicesOf = (spec: Spec<unknown>): readonly string[] | undefined =>
  typeof spec.choices === 'function' ? spec.choices() : spec.choices;
/** A flag's description as it stands now. */
export const descriptionOf = (spec: Spec<unknown>): string =>
  typeof spec.description === 'function' ? spec.description() : spec.description;

/** The flags of a table that fill a field, in the table's order. */
export function boundFlags(table: FlagTable): [string, Bound][] {
  return Object.entries(table).filter((e): e is [string, Bound] => e[1].field !== undefined);
}
// biome-ignore lint/suspicious/noExplicitAny: a table holds flags of any value type
type Bound = Flag<any> & { field: FieldBinding<any> };

function getPath(o: unknown, path: string): unknown {
  let at = o;
  for (const k of path.split('.')) at = at === null || typeof at !== 'object' ? undefined : (at as never)[k];
  return at;
}

function setPath(o: Record<string, unknown>, path: string, v: unknown): void {
  const keys = path.split('.');
  let at = o;
  for (const k of keys.slice(0, -1)) {
    at[k] ??= {};
    at = at[k] as Record<string, unknown>;
  }
  at[keys.at(-1) as string] = v;
}

const takes = (b: FieldBinding<unknown>, kind: string) =>
  b.only === undefined || (typeof b.only === 'function' ? b.only(kind) : b.only.includes(kind));

/**
 * The spec's fields the flags fill, as a nested object for `makeRunSpec` (which fills the rest): an absent flag
 * leaves its field to the spec's default, and a flag its `kind` (the provider, the method) does not take is left out.
 */
export function specInputOf(
  table: FlagTable,
  flags: Readonly<Record<string, unknown>>,
  kind: string,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, spec] of boundFlags(table)) {
    const v = flags[key];
    if (v === undefined || !takes(spec.field, kind)) continue;
    const value = spec.field.toField ? spec.field.toField(v, flags) : v;
    if (value !== undefined) setPath(out, spec.field.path, value);
  }
  return out;
}

const sameValue = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
const isEmpty = (v: unknown) => typeof v === 'object' && v !== null && Object.keys(v).length === 0;

/**
 * The flags given a value other than their default that `kind` does not take, in the table's order, each with the
 * kinds that take it where the table lists them (`--epochs`: bilstm).
 */
export function strayFlags(
  table: FlagTable,
  flags: Readonly<Record<string, unknown>>,
  kind: string,
): { flag: string; only: readonly string[] | undefined }[] {
  return boundFlags(table)
    .filter(([key, f]) => {
      const v = flags[key];
      return (
        v !== undefined && !takes(f.field, kind) && (f.default === undefined || !sameValue(v, f.default))
      );
    })
    .map(([key, f]) => ({
      flag: flags[key] === false && f.off !== undefined ? `--no-${flagNameOf(f).slice(2)}` : flagNameOf(f),
      only: typeof f.field.only === 'function' ? undefined : f.field.only,
    }));
}

/**
 * The command-line words that make `spec`'s fields, in the table's order: a field at its flag's default, false or
 * empty is left out (the command line says what differs); one that cannot be written is named by `notWritten`.
 * False is written where a flag says it: `--no-cache` (a flag with `off`), `--no-download` (on unless given).
 */
export function flagWordsOf(table: FlagTable, spec: unknown, kind: string): string[] {
  const words: string[] = [];
  for (const [, flag] of boundFlags(table)) {
    const b = flag.field;
    const v = getPath(spec, b.path);
    if (v === undefined || isEmpty(v) || !takes(b, kind)) continue;
    if (flag.default !== undefined && sameValue(v, flag.default) && !b.writtenAtDefault) continue;
    const name = flagNameOf(flag);
    if (v === false) {
      if (flag.off !== undefined) words.push(`--no-${name.slice(2)}`);
      else if (name.startsWith('--no-')) words.push(name);
    } else if (b.notWritten !== undefined) words.push(name, b.notWritten);
    else if (isSwitch(flag)) words.push(name);
    else {
      const values = b.toValues ? b.toValues(v as never) : Array.isArray(v) ? v.map(String) : [String(v)];
      for (const one of values) words.push(name, one);
    }
  }
  return words;
}

/** The flag bound to the field `path`, or undefined. */
export function flagOfField(table: FlagTable, path: string): Flag<unknown> | undefined {
  return boundFlags(table).find(([, f]) => f.field.path === path)?.[1];
}

/**
 * A plan's value for the field `path` as its flag reads it: text is parsed by the flag's own parser, then made the
 * field's value, so that a plan takes every short form the flag takes (`shard: auto/8`, `max_tokens: "64"`,
 * `allow_failures: 2.5%`); text the flag refuses is left for the spec's schema, which names the plan's key. Other
 * values (YAML numbers, lists, records) are the field's form already. `context`
 * stands for the other flags (a plan cell's provider, for a path made absolute for it).
 */
export function planValueOf(
  table: FlagTable,
  path: string,
  v: unknown,
  context: Readonly<Record<string, unknown>> = {},
): unknown {
  const flag = flagOfField(table, path);
  if (flag === undefined || typeof v !== 'string' || isSwitch(flag)) return v;
  let parsed: unknown;
  try {
    parsed = flag.parse ? flag.parse(v, flag.default) : v;
  } catch (e) {
    // Not a form the flag takes: left as it is, for the spec's schema to name by the plan's key.
    if (e instanceof UsageError) return v;
    throw e;
  }
  // Made the field's value as the flag's is: `auto/8` without an array job is refused here, saying why.
  const b = flag.field;
  return b?.toField && b.isPath === undefined ? b.toField(parsed, context) : parsed;
}

/**
 * A spec's problem (`field: what is wrong`, as `makeRunSpec` lists them) in the words of the flags: each field
 * named, before the colon and in the text, becomes the flag that fills it. The rules are the spec's, once.
 */
export function inFlagWords(table: FlagTable, problem: string): string {
  const bound = boundFlags(table)
    .map(([, f]) => [f.field.path, flagNameOf(f)] as const)
    .sort((a, b) => b[0].length - a[0].length);
  const at = problem.indexOf(': ');
  const head = at < 0 ? '' : problem.slice(0, at);
  const rest = at < 0 ? problem : problem.slice(at);
  const named = head
    .split(', ')
    .map((p) => bound.find(([path]) => p === path || p.startsWith(`${path}.`))?.[1] ?? p)
    .join(', ');
  // In the text, only the fields whose names cannot be ordinary words (max_tokens, batch_poll_s).
  const text = rest.replace(/\b[a-z]+(?:_[a-z]+)+\b/g, (w) => bound.find(([path]) => path === w)?.[1] ?? w);
  return `${named}${text}`;
}

/**
 * The run spec of `kind` that the flags of `table` make, with `fixed` (a method, a provider made apart) beside them:
 * made by `makeRunSpec`, whose problems are told in the flags' words, as one UsageError.
 */
export function specOfFlags(
  table: FlagTable,
  flags: Readonly<Record<string, unknown>>,
  o: { kind: RunSpec['kind']; of: string; fixed?: Record<string, unknown>; where: string },
): RunSpec {
  try {
    return makeRunSpec(
      { schema: RUN_SPEC_SCHEMA, kind: o.kind, ...specInputOf(table, flags, o.of), ...o.fixed },
      o.where,
    );
  } catch (e) {
    if (!(e instanceof RunSpecError)) throw e;
    throw new UsageError(e.problems.map((p) => inFlagWords(table, p)).join('\n'));
  }
}
