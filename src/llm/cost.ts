/**
 * What a run costs, in USD at the given prices per million tokens: the estimate that `--max-cost` checks before
 * anything is sent, and the spending it watches while the run goes. The estimate is a ceiling: prompts counted by
 * the server where it can count them (vLLM's /tokenize of the messages, Anthropic's count_tokens), else bounded
 * by their UTF-8 bytes (no tokenizer makes more tokens than bytes) plus a chat template's tokens per message; every
 * reply at its `max_tokens`.
 */
import pLimit from 'p-limit';
import type { JournalEntry } from './journal.js';
import type { ChatMessage } from './prompt.js';
import type { Provider, SamplingParams } from './provider.js';
import type { LlmRequest } from './requests.js';

export interface Prices {
  /** USD per million prompt tokens. */
  prompt: number;
  /** USD per million completion tokens. */
  completion: number;
}

export const costOf = (prices: Prices, promptTokens: number, completionTokens: number): number =>
  (promptTokens * prices.prompt + completionTokens * prices.completion) / 1e6;

/** What the answered entries cost, from the token counts their servers reported. */
export function spentOn(entries: Iterable<JournalEntry | undefined>, prices: Prices): number {
  let usd = 0;
  for (const e of entries)
    if (e?.status === 'ok' && e.usage) usd += costOf(prices, e.usage.promptTokens, e.usage.completionTokens);
  return usd;
}

/** The tokens a chat template adds around each message (role markers, separators), at most: a ceiling. */
const TEMPLATE_TOKENS_PER_MESSAGE = 16;

const bytesOf = (messages: readonly ChatMessage[]): number =>
  messages.reduce((n, m) => n + Buffer.byteLength(m.content, 'utf8') + TEMPLATE_TOKENS_PER_MESSAGE, 0);

export interface CostEstimate {
  usd: number;
  requests: number;
  promptTokens: number;
  completionTokens: number;
  /** How the prompts were counted: by the server's tokenizer, or bounded by their bytes (some or all). */
  counted: 'server' | 'bytes' | 'mixed';
  /** Each request's own ceiling, USD, in the order given: what `--max-cost` reserves before sending it. */
  each: number[];
}

/** The most the requests can cost: see the module's note. Identical prompts (repeats) are counted once. */
export async function estimateCost(
  requests: readonly LlmRequest[],
  o: { provider: Provider; params: SamplingParams; prices: Prices; concurrency: number },
): Promise<CostEstimate> {
  const limit = pLimit(Math.max(1, o.concurrency));
  const counts = new Map<string, Promise<number | undefined>>();
  let byServer = 0;
  let byBytes = 0;
  const prompts = await Promise.all(
    requests.map(async (job) => {
      if (job.kind === 'loglik') {
        // Each candidate is scored as a continuation of the context: the context and the candidate, per candidate.
        byBytes++;
        return job.item.candidates.reduce(
          (n, c) => n + Buffer.byteLength(job.item.context + c.text, 'utf8'),
          0,
        );
      }
      const key = JSON.stringify(job.messages);
      let counted = counts.get(key);
      if (!counted) {
        const count = o.provider.countChatTokens?.bind(o.provider);
        counted = count ? limit(() => count(job.messages)) : Promise.resolve(undefined);
        counts.set(key, counted);
      }
      const n = await counted;
      if (n === undefined) byBytes++;
      else byServer++;
      return n ?? bytesOf(job.messages);
    }),
  );
  const promptTokens = prompts.reduce((a, b) => a + b, 0);
  const completionTokens = requests.reduce(
    (n, job) => n + (job.kind === 'chat' ? (job.params ?? o.params).maxTokens : 0),
    0,
  );
  const each = requests.map((job, i) =>
    costOf(o.prices, prompts[i] as number, job.kind === 'chat' ? (job.params ?? o.params).maxTokens : 0),
  );
  return {
    each,
    usd: costOf(o.prices, promptTokens, completionTokens),
    requests: requests.length,
    promptTokens,
    completionTokens,
    counted: byBytes === 0 ? 'server' : byServer === 0 ? 'bytes' : 'mixed',
  };
}

/** Dollars to the cent from $1 up, to three significant digits below (a quick look costs fractions of a cent). */
const usd = (x: number): string => `$${x >= 1 ? x.toFixed(2) : String(Number(x.toPrecision(3)))}`;

/** The estimate in words, for the refusal and the log. */
export function describeEstimate(e: CostEstimate, maxTokens: number): string {
  const how =
    e.counted === 'server'
      ? 'prompt tokens as the server counts them'
      : e.counted === 'bytes'
        ? 'prompt tokens at most (their UTF-8 bytes: the server counts no tokens)'
        : 'prompt tokens, counted by the server where it could, else bounded by their bytes';
  return `up to ${usd(e.usd)} for ${e.requests} requests (${e.promptTokens} ${how}; ${e.completionTokens} completion tokens at --max-tokens ${maxTokens})`;
}

export { usd as formatUsd };
