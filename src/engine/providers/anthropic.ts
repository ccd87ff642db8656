/** Anthropic's Messages API: the settings of a model server, its address known; its Message Batches; no log-probabilities. */
import { z } from 'zod';
import {
  ANTHROPIC_BASE_URL,
  ANTHROPIC_CACHE_PRICING,
  AnthropicProvider,
  MIN_THINKING_BUDGET,
} from '../../llm/anthropic.js';
import { anthropicBatches } from '../../llm/anthropic-batch.js';
import type { ProviderRecord } from './record.js';
import { openServer, type ServerSpec, serverFields, serverVariables } from './server.js';

export const anthropicSchema = z
  .object({
    name: z.literal('anthropic'),
    ...serverFields,
    base_url: z.string().min(1).default(ANTHROPIC_BASE_URL),
  })
  .strict();

export const anthropic: ProviderRecord<z.output<typeof anthropicSchema>> = {
  name: 'anthropic',
  about: "Anthropic's Messages API",
  schema: anthropicSchema,
  local: false,
  concurrency: 8,
  cachePricing: ANTHROPIC_CACHE_PRICING,
  leavesOut: ['mode', 'label_words', 'reasoning_effort'],
  paths: [],
  open: async (p, o) => openServer(AnthropicProvider, p as ServerSpec, o),
  batches: (provider) => anthropicBatches(provider as AnthropicProvider),
  modelName: (p) => p.model,
  maxReplyBytes: (p) => p.max_reply_bytes,
  variables: (p) => serverVariables(p as ServerSpec),
  endpoint: (p) => `anthropic ${p.base_url}`,
  problems(s) {
    const out: string[] = [];
    if (s.reasoning_effort !== undefined)
      out.push("reasoning_effort: OpenAI's setting; Anthropic's models think within thinking_budget");
    if (s.mode === 'loglik') out.push('mode: the Messages API returns no log-probabilities; use generate');
    const budget = s.thinking_budget;
    if (budget !== undefined && (budget < MIN_THINKING_BUDGET || budget >= s.max_tokens))
      out.push(
        `thinking_budget: Anthropic takes at least ${MIN_THINKING_BUDGET} tokens, and fewer than max_tokens (${s.max_tokens}), which the thinking counts against; got ${budget}`,
      );
    return out;
  },
};
