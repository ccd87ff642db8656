/**
 * What a run costs, in USD at the given prices per million tokens: the estimate that `--max-cost` checks before
 * anything is sent, and the spending it watches while the run goes. The estimate is a ceiling: prompts counted by
 * the server where it can count them (vLLM's /tokenize of the messages, Anthropic's count_tokens), else bounded
 * by their UTF-8 bytes (no tokenizer makes more tokens than bytes) plus a chat template's tokens per message; every
 * reply at its `max_tokens`, every prompt token at the dearest of the prompt prices (a prompt written to the cache
 * costs more than one sent plainly).
 *
 * Cached prompt tokens have prices of their own (#43 item 5). Anthropic reports three prompt counts that add up to
 * the prompt: `input_tokens`, `cache_read_input_tokens` (billed at 0.1× the input price) and
 * `cache_creation_input_tokens` (1.25× for the 5-minute cache), per
 * https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching#pricing. OpenAI reports
 * `prompt_tokens_details.cached_tokens` inside `prompt_tokens`, at a discount that depends on the model
 * (https://platform.openai.com/docs/guides/prompt-caching, https://openai.com/api/pricing/), and reports no cache writes.
 */
import pLimit from 'p-limit';
import type { Bought, JournalEntry } from './journal.js';
import type { ChatMessage } from './prompt.js';
import type { Provider, SamplingParams } from './provider.js';
import type { LlmRequest } from './requests.js';

export interface Prices {
  /** USD per million prompt tokens. */
  prompt: number;
  /** USD per million completion tokens. */
  completion: number;
  /** USD per million prompt tokens read from a prompt cache; `prompt` where absent. */
  cached?: number;
  /** USD per million prompt tokens written to a prompt cache; `prompt` where absent. */
  cacheWrite?: number;
}

/** What a reply's token counts say it cost: the ledger's counts, the cached and written ones parts of the prompt. */
export interface PricedTokens {
  promptTokens: number;
  completionTokens: number;
  /** Of the prompt tokens, those read from the cache. */
  cachedPromptTokens?: number | undefined;
  /** Of the prompt tokens, those written to the cache. */
  cacheWriteTokens?: number | undefined;
}

/**
 * How a provider bills prompt tokens read from and written to its cache, from the prompt price: each provider's
 * record (src/engine/providers/) holds its own.
 */
export interface CachePricing {
  cached(prompt: number): number;
  cacheWrite(prompt: number): number;
}

/**
 * OpenAI-compatible servers: both at the prompt price, in full, because the discount depends on the model (50% off
 * for GPT-4o, 75% for GPT-4.1, 90% for GPT-5) and a local server bills nothing: no default may make `--max-cost`
 * count less than was spent. Give `--price-cached` for the model's discount.
 */
export const FULL_PRICE_CACHE: CachePricing = { cached: (p) => p, cacheWrite: (p) => p };

/**
 * The prices a provider's replies are billed at, where only some were given: the cache prices not given come from
 * the provider's `CachePricing` (Anthropic's: src/llm/anthropic.ts `ANTHROPIC_CACHE_PRICING`).
 *
 * @example pricesFor(ANTHROPIC_CACHE_PRICING, { prompt: 3, completion: 15 }) // { prompt: 3, completion: 15, cached: 0.3, cacheWrite: 3.75 }
 */
export function pricesFor(cache: CachePricing, p: Prices): Required<Prices> {
  return {
    prompt: p.prompt,
    completion: p.completion,
    cached: p.cached ?? cache.cached(p.prompt),
    cacheWrite: p.cacheWrite ?? cache.cacheWrite(p.prompt),
  };
}

/**
 * USD for one reply's (or a ledger's) tokens: the prompt tokens neither read from nor written to the cache at
 * `prompt`, the cached at `cached`, the written at `cacheWrite`, the completion at `completion`.
 */
export function costOf(prices: Prices, t: PricedTokens): number {
  const cached = t.cachedPromptTokens ?? 0;
  const written = t.cacheWriteTokens ?? 0;
  const plain = Math.max(0, t.promptTokens - cached - written);
  return (
    (plain * prices.prompt +
      cached * (prices.cached ?? prices.prompt) +
      written * (prices.cacheWrite ?? prices.prompt) +
      t.completionTokens * prices.completion) /
    1e6
  );
}

/** A ceiling for prompts whose caching is not known in advance: every prompt token at the dearest prompt price. */
const ceilingPrices = (p: Prices): Prices => ({
  prompt: Math.max(p.prompt, p.cached ?? p.prompt, p.cacheWrite ?? p.prompt),
  completion: p.completion,
});

/**
 * What the answered entries cost, from the token counts their servers reported, each at the rate it was bought at
 * (`bought`: online at `prices`, a batch's at its discount off them). An entry that does not say (a journal of an
 * older version, a queue cell's) is priced at `unsaid`, the discount of the run reading it (0 online).
 */
export function spentOn(entries: Iterable<JournalEntry | undefined>, prices: Prices, unsaid = 0): number {
  let usd = 0;
  // A failed entry carries token counts only where its reply was paid though not read (cut off past the reply cap).
  for (const e of entries) if (e?.usage) usd += costOf(prices, e.usage) * (1 - discountOf(e, unsaid));
  return usd;
}

/** The share of the list prices an answer saved: its batch's discount, 0 online, `unsaid` where it does not say. */
export const discountOf = (e: JournalEntry, unsaid: number): number =>
  e.bought ? (e.bought.discount ?? 0) : unsaid;

/** The answers and what they cost, by how they were bought: the summary's `llm.online` and `llm.batch` parts. */
export function spentByWay(
  entries: readonly JournalEntry[],
  prices: Prices | undefined,
  unsaid: { via: Bought['via']; discount: number },
): Partial<Record<Bought['via'], { answers: number; cost?: number }>> {
  const out: Partial<Record<Bought['via'], { answers: number; cost?: number }>> = {};
  for (const e of entries) {
    if (e.status !== 'ok') continue;
    const via = e.bought?.via ?? unsaid.via;
    const part = out[via] ?? { answers: 0, ...(prices ? { cost: 0 } : {}) };
    out[via] = part;
    part.answers++;
    if (prices && e.usage) part.cost = (part.cost ?? 0) + spentOn([e], prices, unsaid.discount);
  }
  return out;
}

/** The tokens a model puts before each prompt it scores (its BOS), at most. */
const LOGLIK_BOS_TOKENS = 1;

/** The tokens a chat template adds around each message (role markers, separators), at most: a ceiling. */
const TEMPLATE_TOKENS_PER_MESSAGE = 16;

const bytesOf = (messages: readonly ChatMessage[]): number =>
  messages.reduce((n, m) => n + Buffer.byteLength(m.content, 'utf8') + TEMPLATE_TOKENS_PER_MESSAGE, 0);

/**
 * Token counts for a reply whose server gave none readable (strings, negative, above 10⁷): the prompt bounded by its
 * bytes and a chat template's tokens per message, the completion by the bytes of the reply (and its reasoning), as the
 * estimate above bounds them. A ceiling, so that `--max-cost` and the cost never count such a reply as free; the entry
 * keeps `usageProblem`, which flags it (#59 item 10).
 */
export function estimatedUsage(
  messages: readonly ChatMessage[],
  reply: { text: string; reasoning?: string | undefined },
): { promptTokens: number; completionTokens: number } {
  return {
    promptTokens: bytesOf(messages),
    completionTokens:
      Buffer.byteLength(reply.text, 'utf8') + Buffer.byteLength(reply.reasoning ?? '', 'utf8'),
  };
}

/**
 * The token counts of a chat request's ceiling (its prompt bounded by its bytes, `maxTokens` completion tokens): what a
 * reply cut off past the reply cap is counted as, an estimate below what a server that ignores max_tokens bills.
 */
export const ceilingUsage = (
  messages: readonly ChatMessage[],
  maxTokens: number,
): { promptTokens: number; completionTokens: number } => ({
  promptTokens: bytesOf(messages),
  completionTokens: maxTokens,
});

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
    requests.map(async (request) => {
      if (request.kind === 'loglik') {
        // Each candidate is scored as a continuation of the context (the context and the candidate, per candidate),
        // and a method may send the context alone too (where the candidate's tokens begin); every prompt starts with
        // the model's BOS token. Left out, the estimate fell half short of the bill on RuMedDaNet (#59 item 10).
        byBytes++;
        return (
          Buffer.byteLength(request.item.context, 'utf8') +
          LOGLIK_BOS_TOKENS +
          request.item.candidates.reduce(
            (n, c) => n + Buffer.byteLength(request.item.context + c.text, 'utf8') + LOGLIK_BOS_TOKENS,
            0,
          )
        );
      }
      const key = JSON.stringify(request.messages);
      let counted = counts.get(key);
      if (!counted) {
        const count = o.provider.countChatTokens?.bind(o.provider);
        counted = count ? limit(() => count(request.messages)) : Promise.resolve(undefined);
        counts.set(key, counted);
      }
      const n = await counted;
      if (n === undefined) byBytes++;
      else byServer++;
      return n ?? bytesOf(request.messages);
    }),
  );
  const promptTokens = prompts.reduce((a, b) => a + b, 0);
  const completionTokens = requests.reduce(
    (n, request) => n + (request.kind === 'chat' ? (request.params ?? o.params).maxTokens : 0),
    0,
  );
  const ceiling = ceilingPrices(o.prices);
  const each = requests.map((request, i) =>
    costOf(ceiling, {
      promptTokens: prompts[i] as number,
      completionTokens: request.kind === 'chat' ? (request.params ?? o.params).maxTokens : 0,
    }),
  );
  return {
    each,
    usd: costOf(ceiling, { promptTokens, completionTokens }),
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
