/** An OpenAI-compatible server (OpenAI, vLLM, llama.cpp's server, …): chat and log-likelihood, OpenAI's Batch API. */
import { z } from 'zod';
import { FULL_PRICE_CACHE } from '../../llm/cost.js';
import { OpenAIProvider } from '../../llm/openai.js';
import { openAIBatches } from '../../llm/openai-batch.js';
import type { ProviderRecord } from './record.js';
import { openServer, type ServerSpec, serverFields, serverVariables } from './server.js';

export const openaiSchema = z.object({ name: z.literal('openai'), ...serverFields }).strict();

export const openai: ProviderRecord<z.output<typeof openaiSchema>> = {
  name: 'openai',
  about: 'an OpenAI-compatible endpoint',
  schema: openaiSchema,
  local: false,
  concurrency: 8,
  cachePricing: FULL_PRICE_CACHE,
  leavesOut: [],
  paths: [],
  open: async (p, o) => openServer(OpenAIProvider, p as ServerSpec, o),
  batches: (provider) => openAIBatches(provider as OpenAIProvider),
  batchFile: (p) => openAIBatches(new OpenAIProvider({ baseUrl: p.base_url, model: p.model })),
  modelName: (p) => p.model,
  maxReplyBytes: (p) => p.max_reply_bytes,
  variables: (p) => serverVariables(p as ServerSpec),
  endpoint: (p) => `openai ${p.base_url}`,
};
