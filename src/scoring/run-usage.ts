/**
 * What an LLM run spent, as an upload carries it to a leaderboard: the tokens its replies reported and, where the run
 * was priced, its cost in USD (a batch run's at its discount). One schema, written by `submit` from the run's summary
 * and read by the server, which stores it as the uploader's claim: the board says so, it checks nothing but the shape.
 */
import { z } from 'zod';
import type { LlmDetails } from './run-log.js';

/** More tokens than any evaluation spends, or dollars than any spends: a figure past these is not a run's. */
const MAX_TOKENS = 1e13;
const MAX_USD = 1e7;

const tokens = z.number().int().nonnegative().max(MAX_TOKENS);

export const runUsageSchema = z
  .object({
    prompt_tokens: tokens,
    completion_tokens: tokens,
    /** Of the completion tokens, those spent reasoning: only where the provider reported them. */
    reasoning_tokens: tokens.optional(),
    cached_prompt_tokens: tokens.optional(),
    /** Requests the run made (repeats and formulations included). */
    requests: tokens.optional(),
    /** USD at the prices the run was given; absent when it was given none. */
    cost_usd: z.number().nonnegative().max(MAX_USD).optional(),
    /** Sent through a provider's batch API (priced at its discount), every answer of it (not a run bought both ways). */
    batch: z.boolean().optional(),
  })
  .strict()
  .refine((u) => u.reasoning_tokens === undefined || u.reasoning_tokens <= u.completion_tokens, {
    message: 'reasoning_tokens: more than completion_tokens',
  })
  .refine((u) => u.cached_prompt_tokens === undefined || u.cached_prompt_tokens <= u.prompt_tokens, {
    message: 'cached_prompt_tokens: more than prompt_tokens',
  });
export type RunUsage = z.output<typeof runUsageSchema>;

/** An LLM run's spending from its summary's `llm` part; undefined where its replies reported no tokens. */
export function runUsageOf(llm: LlmDetails): RunUsage | undefined {
  const u = llm.usage;
  if (!u || u.prompt_tokens + u.completion_tokens === 0) return undefined;
  return {
    prompt_tokens: u.prompt_tokens,
    completion_tokens: u.completion_tokens,
    ...(u.reasoning_tokens !== undefined ? { reasoning_tokens: u.reasoning_tokens } : {}),
    ...(u.cached_prompt_tokens !== undefined ? { cached_prompt_tokens: u.cached_prompt_tokens } : {}),
    ...(llm.requests ? { requests: llm.requests.total } : {}),
    ...(typeof llm.cost === 'number' ? { cost_usd: llm.cost } : {}),
    // "Sent through the batch API, priced at its discount" only where every answer was: a run resumed online after a
    // batch, or the reverse, is priced at both rates (its cost_usd their sum), and the board's tag would say otherwise.
    ...(llm.batch !== undefined && (llm.online?.answers ?? 0) === 0 ? { batch: true } : {}),
  };
}

/** The usage an upload's metadata field holds (JSON text), or why it is not one. */
export function parseRunUsage(text: string): { usage: RunUsage } | { problems: string[] } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { problems: ['not JSON'] };
  }
  const r = runUsageSchema.safeParse(raw);
  if (r.success) return { usage: r.data };
  return {
    problems: r.error.issues
      .slice(0, 3)
      .map((i) => (i.path.length > 0 ? `${i.path.map(String).join('.')}: ${i.message}` : i.message)),
  };
}
