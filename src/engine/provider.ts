/**
 * A provider from its spec, opened by its record (./providers/registry.ts). Keys come from the environment of the
 * process that runs the spec (a worker reads its own), never from the spec.
 */
import type { Provider } from '../llm/provider.js';
import type { OpenProviderOptions } from './providers/record.js';
import { recordOf } from './providers/registry.js';
import type { ProviderSpec } from './spec.js';

export type { OpenProviderOptions } from './providers/record.js';

export function openProvider(p: ProviderSpec, o: OpenProviderOptions): Promise<Provider> {
  return recordOf(p).open(p, o);
}
