/** A local GGUF model run in this process by node-llama-cpp: no server, no key, no batch API. */
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { z } from 'zod';
import { UsageError } from '../../errors.js';
import { FULL_PRICE_CACHE } from '../../llm/cost.js';
import { LLM_DEFAULTS, whole } from '../spec-parts.js';
import type { ProviderRecord } from './record.js';

export const llamaSchema = z
  .object({
    name: z.literal('llama'),
    /** The .gguf file. */
    model: z.string().min(1),
    context_size: whole(64).default(LLM_DEFAULTS.contextSize),
    gpu: z.boolean().default(false),
    threads: whole(1).optional(),
  })
  .strict();

export const llama: ProviderRecord<z.output<typeof llamaSchema>> = {
  name: 'llama',
  about: 'a local GGUF model',
  schema: llamaSchema,
  local: true,
  concurrency: 1,
  cachePricing: FULL_PRICE_CACHE,
  leavesOut: ['reasoning_effort', 'thinking_budget'],
  paths: ['model'],
  async open(p, o) {
    if (!existsSync(p.model))
      throw new UsageError(`--provider llama needs --model PATH.gguf; ${p.model} does not exist`);
    const { LlamaProvider } = await import('../../llm/llama.js');
    // N sequences of one context, evaluated in batches by node-llama-cpp.
    return LlamaProvider.load({
      modelPath: p.model,
      contextSize: p.context_size,
      gpu: p.gpu,
      sequences: o.concurrency,
      ...(p.threads !== undefined ? { threads: p.threads } : {}),
    });
  },
  modelName: (p) => basename(p.model),
  variables: () => [],
  endpoint: () => 'this machine',
  problems(s) {
    return s.reasoning_effort !== undefined || s.thinking_budget !== undefined
      ? [
          'reasoning_effort, thinking_budget: read by model servers (provider openai or anthropic), not by a local GGUF model',
        ]
      : [];
  },
};
