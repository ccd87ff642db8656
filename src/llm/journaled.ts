/**
 * A provider whose answers are journaled (journal.ts) by the request's content: asked again, a request already
 * answered returns its journaled answer without reaching the server. `contamination --out DIR` runs its probes
 * through one, so that a run killed at any point (kill -9 included) resumes with `--resume`, re-asking only what was
 * in flight.
 */
import { createHash } from 'node:crypto';
import type { Journal, JournalEntry } from './journal.js';
import type { LoglikRequest, LoglikResult } from './loglik.js';
import type { ChatMessage } from './prompt.js';
import type { ChatHints, ChatReply, Provider, SamplingParams } from './provider.js';

const keyOf = (value: unknown): string =>
  createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 32);

export function journaled(provider: Provider, journal: Journal, label: string): Provider {
  const model = provider.describe().model;
  const record = (key: string, t0: number, answer: Partial<JournalEntry>) =>
    journal.append({
      key,
      task: label,
      split: '',
      id: key,
      status: 'ok',
      ...answer,
      latencyMs: performance.now() - t0,
      at: new Date().toISOString(),
    });
  const wrapped: Provider = {
    describe: () => provider.describe(),
    async chat(
      messages: readonly ChatMessage[],
      params: SamplingParams,
      hints?: ChatHints,
    ): Promise<ChatReply> {
      const key = keyOf({ kind: 'chat', model, messages, params, hints: hints ?? null });
      const seen = journal.get(key);
      if (seen?.status === 'ok' && typeof seen.reply === 'string')
        return { text: seen.reply, ...(seen.usage ? { usage: seen.usage } : {}) };
      const t0 = performance.now();
      const reply = await provider.chat(messages, params, hints);
      record(key, t0, { reply: reply.text, ...(reply.usage ? { usage: reply.usage } : {}) });
      return reply;
    },
  };
  if (provider.loglik) {
    const loglik = provider.loglik.bind(provider);
    wrapped.loglik = async (request: LoglikRequest): Promise<LoglikResult> => {
      const key = keyOf({
        kind: 'loglik',
        model,
        context: request.context,
        continuations: request.continuations,
      });
      const seen = journal.get(key);
      if (seen?.status === 'ok' && seen.logprobs && seen.tokens)
        return { logprobs: seen.logprobs, tokens: seen.tokens };
      const t0 = performance.now();
      const r = await loglik(request);
      record(key, t0, { logprobs: r.logprobs, tokens: r.tokens });
      return r;
    };
  }
  if (provider.checkLoglik) wrapped.checkLoglik = provider.checkLoglik.bind(provider);
  // What the model's context holds, and how many tokens a text takes: the order probe fits its shards to it.
  if (provider.contextTokens) wrapped.contextTokens = provider.contextTokens.bind(provider);
  if (provider.countTokens) wrapped.countTokens = provider.countTokens.bind(provider);
  if (provider.countChatTokens) wrapped.countChatTokens = provider.countChatTokens.bind(provider);
  if (provider.loglikLimitation) wrapped.loglikLimitation = provider.loglikLimitation.bind(provider);
  if (provider.limitInFlight) wrapped.limitInFlight = provider.limitInFlight.bind(provider);
  if (provider.checkBeforeRetry) wrapped.checkBeforeRetry = provider.checkBeforeRetry.bind(provider);
  if (provider.breakerWaitMs) wrapped.breakerWaitMs = provider.breakerWaitMs.bind(provider);
  if (provider.close) wrapped.close = provider.close.bind(provider);
  return wrapped;
}
