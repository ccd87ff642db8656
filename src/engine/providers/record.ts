/**
 * What the engine knows of a provider, as one record: its name, the schema of its spec fields, its client, its batch
 * API (or none), how it prices cached prompts, the variables it reads keys from, whether it runs on this machine, and
 * its endpoint as the queue names it. Every door (flags, plans, the queue, the platform) asks the registry
 * (./registry.ts) for a provider's record; nothing outside this folder switches on a provider's name.
 */
import type { z } from 'zod';
import type { ConnectGuard } from '../../data/public-address.js';
import type { BatchApi } from '../../llm/batch.js';
import type { CachePricing } from '../../llm/cost.js';
import type { Provider } from '../../llm/provider.js';
import type { Logger } from '../../log.js';

export interface OpenProviderOptions {
  /** Requests in flight (a server); sequences evaluated in parallel (a local model). */
  concurrency: number;
  log: Logger;
  /** Where keys and header values are read (default: this process's environment; a worker gives only its own). */
  env?: NodeJS.ProcessEnv;
  /** Connect only to public addresses (the platform's workers without `--allow-private`). */
  guard?: ConnectGuard;
}

/** The run settings a provider's own rules read (a made LLM spec has them all). */
export interface RunSettingsSeen {
  mode: 'generate' | 'loglik';
  max_tokens: number;
  batch?: boolean | undefined;
  reasoning_effort?: string | undefined;
  thinking_budget?: number | undefined;
}

/** A provider's spec: its name and its own fields, as its schema made them. */
export type ProviderFields = { name: string } & Record<string, unknown>;

export interface ProviderRecord<P extends ProviderFields = ProviderFields> {
  name: P['name'];
  /** One line for `--provider`'s help and docs. */
  about: string;
  /** Its spec fields, `name` a literal; strict, every default filled. */
  schema: z.ZodObject;
  /** A model on this machine: no server, no key, one such cell at a time on a worker. */
  local: boolean;
  /** Requests in flight when the spec gives no `concurrency`. */
  concurrency: number;
  /** Its cache prices from the prompt price, where a spec gives none. */
  cachePricing: CachePricing;
  /** The run fields (a plan's settings) it does not take. */
  leavesOut: readonly string[];
  /** Its fields that are paths, made absolute where a plan or a flag gives them. */
  paths: readonly string[];
  /** The client, ready to send; keys from `o.env`. */
  open(p: P, o: OpenProviderOptions): Promise<Provider>;
  /** Its batch API, for an open client of it; absent: it has none. */
  batches?(provider: Provider): BatchApi;
  /** Its batch API with no key (a batch input file written, nothing sent); absent: it writes none. */
  batchFile?(p: P): BatchApi;
  /** The model as request keys name it. */
  modelName(p: P): string;
  /** The limit on a reply's size it reads, if it has one. */
  maxReplyBytes?(p: P): number;
  /** The environment variables it reads on the machine that runs it, each with what it holds. */
  variables(p: P): { variable: string; holds: string }[];
  /** Its endpoint as the queue counts requests in flight ('this machine' for a local model). */
  endpoint(p: P): string;
  /** What it refuses of the run's settings, each problem with its field first ("field: why"). */
  problems?(s: RunSettingsSeen, p: P): string[];
}
