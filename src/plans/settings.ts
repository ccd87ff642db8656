/**
 * A plan's settings are the run spec's own fields (src/engine/spec.ts), by the same names, checked by the same
 * schema: no flag is read on the way. A model's entry is flat: its provider's fields (`model`, `base_url`,
 * `api_key_env`, `headers`, …; an encoder's `model`, `endpoint`, `pooling`, …) stand beside the run's (`shots`,
 * `max_tokens`, `prices`, …), and a cell's spec is `makeRunSpec(specInput({...defaults, ...model, ...combo}))`.
 * Older names (the flags', `max_wait`, `price_prompt`, `template`, …) are read with one warning naming the field;
 * a few short forms are read as the command line reads them (a comma list, `5%`, `2/8`, `"Name: VAR"`).
 */
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { BASELINE_FLAGS } from '../engine/baseline-flags.js';
import { boundFlags, flagNameOf, flagOfField, planValueOf } from '../engine/flag-table.js';
import { headerRecord, LLM_FLAGS } from '../engine/llm-flags.js';
import type { ProviderRecord } from '../engine/providers/record.js';
import { providerNames, providerRecord, recordOf } from '../engine/providers/registry.js';
import { type LlmSpec, makeRunSpec, RUN_SPEC_SCHEMA, type RunSpec, SPEC_FIELDS } from '../engine/spec.js';
import { parsePromptVariants, readTemplates } from '../llm/prompt.js';
import { getTask } from '../tasks/registry.js';

/** One setting a provider takes. */
export interface Setting {
  /** Throws an Error saying what the value should be. */
  check(value: unknown): void;
}

/** How one kind of model is run: the settings it takes, by plan key (`max_tokens`), and the spec they make. */
export interface PlanProvider {
  settings: ReadonlyMap<string, Setting>;
  /** A cell's run spec from its settings (each already checked and in the spec's form). */
  toSpec(settings: Readonly<Record<string, unknown>>): RunSpec;
  /** Where the requests of a cell go, for the in-flight budget (one endpoint, one local model). */
  endpoint(spec: RunSpec): string;
  /** Requests one cell of this provider keeps in flight (its concurrency); Infinity for a cell that holds the machine. */
  inFlight(spec: RunSpec): number;
  /** Settings that are paths: a relative one (`./`, `../`) is read from the plan file's folder. */
  paths: readonly string[];
}

/** The spec's fields a plan never sets: its frame, and steps of one run by hand (a batch results file, a saved model). */
const NOT_PLAN = [
  'schema',
  'kind',
  'name',
  'provider',
  'method',
  'encoder',
  'task_files',
  'batch_results',
  'save',
];
const fieldsOf = (shape: object, drop: readonly string[] = []) =>
  Object.keys(shape).filter((k) => !NOT_PLAN.includes(k) && !drop.includes(k));

/** `prices` field by field, so that a model's `prices.prompt` overrides the defaults' and keeps their completion. */
const PRICE_KEYS = ['prices.prompt', 'prices.completion', 'prices.cached', 'prices.cache_write'];
const price = z.number().min(0);

/** A flag's name as a plan key: `--max-wait` → `max_wait`. */
const keyOfFlag = (f: string) => f.slice(2).replaceAll('-', '_');
/** A plan key's field in the spec: its own, or its provider's (`base_url` → `provider.base_url`). */
const fieldPathOf = (key: string) =>
  flagOfField(LLM_FLAGS, key) === undefined && flagOfField(LLM_FLAGS, `provider.${key}`) !== undefined
    ? `provider.${key}`
    : key;

/**
 * Old plan keys (the flags' names) → the spec's field they stand for: every flag of `llm` whose name is not its
 * field's (`max_wait` → `max_wait_s`, `price_prompt` → `prices.prompt`), read from the flags' table.
 */
export const RENAMED: Readonly<Record<string, string>> = Object.fromEntries(
  boundFlags(LLM_FLAGS)
    .map(([, f]) => [keyOfFlag(flagNameOf(f)), f.field.path.replace(/^provider\./, '')] as const)
    // `provider` names the provider in a plan as on the command line.
    .filter(([from, to]) => from !== to && from !== 'provider'),
);

/** How an old key's new field is written, for its warning. */
export const renamedAs = (to: string) =>
  to.startsWith('prices.') ? `prices: {${to.slice('prices.'.length)}: …}` : to;

/**
 * A value in the spec's form. Text is read as its flag reads it (src/engine/llm-flags.ts; an encoder's own settings,
 * src/engine/baseline-flags.ts), so that a plan takes
 * every short form the command line takes (`shard: auto/8`, `allow_failures: 2.5%`, `perturb: typos=0.05,yo`,
 * `tasks: A,B`, `"Name: VAR"`); other values are the field's form already, left to the spec's schema. `planFile`
 * places a relative `templates` file (an old `template`) beside the plan; `prompts: all` waits for the cell's tasks.
 */
export function specValueOf(key: string, v: unknown, planFile: string): unknown {
  switch (key) {
    case 'prompts':
      return typeof v === 'string' && v.trim() !== 'all' ? v.split(',').map((s) => s.trim()) : v;
    case 'allow_failures':
      return typeof v === 'number' ? { count: v } : planValueOf(LLM_FLAGS, key, v);
    case 'headers':
    case 'header_env':
      // One "Name: value" text, or a list of them as the flag given several times; a credential in one is named at
      // its line by the plan's reader (src/plans/file.ts), so it is not refused here.
      return typeof v === 'string' || (Array.isArray(v) && v.every((h) => typeof h === 'string'))
        ? headerRecord([v].flat(), key === 'headers' ? '--header' : '--header-env', false)
        : v;
    case 'templates':
      return typeof v === 'string'
        ? readTemplates(/^\.\.?(\/|$)/.test(v) ? resolve(dirname(planFile), v) : v)
        : v;
    default: {
      // An LLM cell's setting is read as `llm`'s flag reads it; an encoder cell's own, as `baseline`'s.
      const path = fieldPathOf(key);
      if (flagOfField(LLM_FLAGS, path) !== undefined) return planValueOf(LLM_FLAGS, path, v);
      const own = flagOfField(BASELINE_FLAGS, key) === undefined ? `encoder.${key}` : key;
      return planValueOf(BASELINE_FLAGS, own, v);
    }
  }
}

/** An LLM provider's settings: the run's fields (less those it does not take) and its provider's own. */
function llmProvider(record: ProviderRecord): PlanProvider {
  const { name } = record;
  const shape = record.schema.shape as Record<string, z.ZodTypeAny>;
  const own = fieldsOf(shape);
  const run = fieldsOf(SPEC_FIELDS.llm, record.leavesOut);
  const settings = new Map<string, Setting>();
  const checkBy = (schema: z.ZodTypeAny, key: string) => ({
    check(value: unknown) {
      if (key === 'prompts' && value === 'all') return;
      const r = schema.safeParse(value);
      if (!r.success)
        throw new Error(r.error.issues.map((i) => [...i.path, i.message].join(': ')).join('; '));
    },
  });
  for (const k of run) settings.set(k, checkBy(SPEC_FIELDS.llm[k as keyof typeof SPEC_FIELDS.llm], k));
  for (const k of own) settings.set(k, checkBy(shape[k] as z.ZodTypeAny, k));
  for (const k of PRICE_KEYS) settings.set(k, checkBy(price, k));
  return {
    settings,
    toSpec(s) {
      const provider: Record<string, unknown> = { name };
      const top: Record<string, unknown> = {};
      const prices: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(s)) {
        if (own.includes(k)) provider[k] = v;
        else if (PRICE_KEYS.includes(k)) prices[k.slice('prices.'.length)] = v;
        else top[k] = v;
      }
      // Paths are made absolute here, as the command line makes them: a queued cell runs where the cwd is another.
      if (typeof top.data === 'string') top.data = resolve(top.data);
      if (typeof top.gold === 'string') top.gold = resolve(top.gold);
      for (const k of record.paths) if (typeof provider[k] === 'string') provider[k] = resolve(provider[k]);
      if (Object.keys(prices).length > 0)
        top.prices = { ...(top.prices as Record<string, unknown> | undefined), ...prices };
      if (top.prompts === 'all')
        top.prompts = parsePromptVariants(
          'all',
          ((top.tasks as string[] | undefined) ?? []).map((t) => getTask(t)),
        );
      return makeRunSpec({ schema: RUN_SPEC_SCHEMA, kind: 'llm', provider, ...top }, `the ${name} cell`);
    },
    endpoint: (spec) => recordOf((spec as LlmSpec).provider).endpoint((spec as LlmSpec).provider),
    // A batch cell uploads a file and waits, for hours perhaps, without holding its endpoint's request slots; a
    // local model holds the machine: one such cell at a time.
    inFlight: (spec) => {
      const s = spec as LlmSpec;
      return record.local ? Number.POSITIVE_INFINITY : s.batch ? 0 : s.concurrency;
    },
    paths: ['data', 'gold', ...record.paths],
  };
}

/** A frozen-encoder baseline: the run's fields and the encoder's. */
function encoderProvider(): PlanProvider {
  const own = fieldsOf(SPEC_FIELDS.encoder);
  const run = fieldsOf(SPEC_FIELDS.baseline);
  const settings = new Map<string, Setting>();
  for (const [k, schema] of [
    ...run.map((k) => [k, SPEC_FIELDS.baseline[k as keyof typeof SPEC_FIELDS.baseline]] as const),
    ...own.map((k) => [k, SPEC_FIELDS.encoder[k as keyof typeof SPEC_FIELDS.encoder]] as const),
  ])
    settings.set(k, {
      check(value) {
        const r = (schema as z.ZodTypeAny).safeParse(value);
        if (!r.success)
          throw new Error(r.error.issues.map((i) => [...i.path, i.message].join(': ')).join('; '));
      },
    });
  return {
    settings,
    toSpec(s) {
      const encoder: Record<string, unknown> = {};
      const top: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(s)) (own.includes(k) ? encoder : top)[k] = v;
      if (typeof top.data === 'string') top.data = resolve(top.data);
      if (typeof top.gold === 'string') top.gold = resolve(top.gold);
      if (typeof encoder.cache === 'string') encoder.cache = resolve(encoder.cache);
      return makeRunSpec(
        { schema: RUN_SPEC_SCHEMA, kind: 'baseline', method: 'encoder', encoder, ...top },
        'the encoder cell',
      );
    },
    // With an embeddings endpoint the vectors come from a server, four batches in flight; else from this machine.
    endpoint: (spec) => {
      const e = spec.kind === 'baseline' ? spec.encoder?.endpoint : undefined;
      return e !== undefined ? `embeddings ${e}` : 'this machine';
    },
    inFlight: (spec) =>
      spec.kind === 'baseline' && spec.encoder?.endpoint !== undefined ? 4 : Number.POSITIVE_INFINITY,
    paths: ['data', 'gold', 'model', 'cache'],
  };
}

/** The providers a plan model can name: every registered LLM provider (./engine/providers/registry.ts), and encoder. */
export function planProviders(): Readonly<Record<string, PlanProvider>> {
  return {
    ...Object.fromEntries(providerNames().map((n) => [n, llmProvider(providerRecord(n))])),
    encoder: encoderProvider(),
  };
}
