/** What the engine's unit tests run on without a server or a database: a spec over the fixture data, an empty ledger. */
import { type LlmSpec, makeRunSpec } from '../../src/engine/spec.js';
import type { BatchLedger } from '../../src/llm/batch.js';
import { fixtureDataDir } from './fixture-data.js';

/** An LLM spec of RuMedDaNet over the fixture data, for a server at an address nothing listens on. */
export function fixtureLlmSpec(extra: Record<string, unknown> = {}): LlmSpec {
  const spec = makeRunSpec({
    schema: 'rumedbench.run/1',
    kind: 'llm',
    provider: { name: 'openai', model: 'fake-m', base_url: 'http://127.0.0.1:9' },
    tasks: ['RuMedDaNet'],
    data: fixtureDataDir(),
    max_tokens: 8,
    ...extra,
  });
  if (spec.kind !== 'llm') throw new Error('an llm spec');
  return spec;
}

/** A batch ledger that holds no batch and records none (a store that sends online only). */
export const noBatches = (): BatchLedger => ({
  read: async () => [],
  intents: async () => [],
  creating: async () => {},
  abandoned: async () => {},
  submitted: async () => {},
  collected: async () => {},
});
