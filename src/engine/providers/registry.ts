/**
 * The providers, by name: the one list every door asks (the spec's schema, flags, plans, the queue, the platform).
 * A new provider is a module of this folder with its record, and one line here.
 */
import type { z } from 'zod';
import { UsageError } from '../../errors.js';
import { anthropic, type anthropicSchema } from './anthropic.js';
import { llama, type llamaSchema } from './llama.js';
import { openai, type openaiSchema } from './openai.js';
import type { ProviderFields, ProviderRecord } from './record.js';

/** The spec of a built-in provider, as its schema makes it. */
export type BuiltInProviderSpec =
  | z.output<typeof openaiSchema>
  | z.output<typeof anthropicSchema>
  | z.output<typeof llamaSchema>;

const RECORDS = new Map<string, ProviderRecord>();

/**
 * Adds a provider (a plug-in, or a test's double): from now on a spec may name it and every door runs it. A name
 * already taken is refused: a provider is never replaced under a run.
 */
export function registerProvider<P extends ProviderFields>(record: ProviderRecord<P>): void {
  if (RECORDS.has(record.name)) throw new UsageError(`provider "${record.name}" is registered already`);
  RECORDS.set(record.name, record as unknown as ProviderRecord);
}

for (const r of [openai, anthropic, llama]) registerProvider(r as ProviderRecord<ProviderFields>);

/** The names a spec may give, in the order registered. */
export const providerNames = (): string[] => [...RECORDS.keys()];

export const isProviderName = (name: unknown): name is string =>
  typeof name === 'string' && RECORDS.has(name);

/** The record of a provider by its name (a spec's `provider.name`, a client's `describe().provider`). */
export function providerRecord(name: string): ProviderRecord {
  const r = RECORDS.get(name);
  if (!r) throw new UsageError(`provider: one of ${providerNames().join(', ')}, got "${name}"`);
  return r;
}

/** The record of a spec's provider, typed by it. */
export const recordOf = <P extends { name: string }>(p: P): ProviderRecord<P & ProviderFields> =>
  providerRecord(p.name) as unknown as ProviderRecord<P & ProviderFields>;

/**
 * A provider's `base_url`, as its schema has it: undefined for one with none (a local model), else the address filled
 * when none is given (Anthropic's), `default` undefined where one must be given (an OpenAI-compatible server).
 */
export function baseUrlOf(name: string): { default: string | undefined } | undefined {
  const field = (providerRecord(name).schema.shape as Record<string, z.ZodType | undefined>).base_url;
  if (field === undefined) return undefined;
  const filled = field.safeParse(undefined);
  return { default: filled.success ? (filled.data as string) : undefined };
}
