import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ANTHROPIC_CACHE_PRICING } from './anthropic.js';
import { costOf, estimateCost, FULL_PRICE_CACHE, pricesFor, spentOn } from './cost.js';
import { Journal } from './journal.js';
import type { Provider } from './provider.js';
import type { LlmRequest } from './requests.js';

describe('costOf: cached prompt tokens at their own prices', () => {
  it("prices issue #43's Anthropic example by hand: cache reads at 0.1×, cache writes at 1.25× of the input price", () => {
    // 100 input tokens, 1,000 read from the cache, 2,000 written to it, 500 output, at $3 / $15 per million:
    // 100 × 3 + 1,000 × 0.3 + 2,000 × 3.75 + 500 × 15 = 300 + 300 + 7,500 + 7,500 = $15,600 per million.
    const prices = pricesFor(ANTHROPIC_CACHE_PRICING, { prompt: 3, completion: 15 });
    expect(prices).toEqual({ prompt: 3, completion: 15, cached: 0.3, cacheWrite: 3.75 });
    const usage = {
      promptTokens: 3100,
      completionTokens: 500,
      cachedPromptTokens: 1000,
      cacheWriteTokens: 2000,
    };
    expect(costOf(prices, usage)).toBeCloseTo(0.0156, 12);
    // What the ledger charged before: every prompt token at the input price.
    expect(costOf({ prompt: 3, completion: 15 }, usage)).toBeCloseTo(0.0168, 12);
  });

  it("prices an OpenAI reply's cached tokens (inside prompt_tokens) at the price given for them", () => {
    // GPT-4.1 at $2 / $8, cached input $0.50: 2,000 prompt tokens of which 1,536 cached, 100 completion:
    // 464 × 2 + 1,536 × 0.5 + 100 × 8 = 928 + 768 + 800 = $2,496 per million.
    const prices = pricesFor(FULL_PRICE_CACHE, { prompt: 2, completion: 8, cached: 0.5 });
    expect(prices).toEqual({ prompt: 2, completion: 8, cached: 0.5, cacheWrite: 2 });
    expect(
      costOf(prices, { promptTokens: 2000, completionTokens: 100, cachedPromptTokens: 1536 }),
    ).toBeCloseTo(0.002496, 12);
  });

  it('by default an OpenAI-compatible server charges cached tokens in full: never less than it may bill', () => {
    const prices = pricesFor(FULL_PRICE_CACHE, { prompt: 2, completion: 8 });
    expect(prices).toEqual({ prompt: 2, completion: 8, cached: 2, cacheWrite: 2 });
    expect(
      costOf(prices, { promptTokens: 2000, completionTokens: 100, cachedPromptTokens: 1536 }),
    ).toBeCloseTo(0.0048, 12);
  });

  it('a cached or written count larger than the prompt is charged as given, never below the uncached part', () => {
    const prices = pricesFor(ANTHROPIC_CACHE_PRICING, { prompt: 3, completion: 15 });
    expect(costOf(prices, { promptTokens: 10, completionTokens: 0, cachedPromptTokens: 10 })).toBeCloseTo(
      3e-6,
      15,
    );
  });
});

describe('estimateCost: a log-likelihood item', () => {
  it('counts every prompt a method may send: the context alone and each candidate after it, each with its BOS', async () => {
    // "Вопрос" is 12 bytes, " да" 5, " нет" 7: (12 + 1) + (12 + 5 + 1) + (12 + 7 + 1) = 51 prompt tokens at most.
    const job = {
      kind: 'loglik',
      key: 'k',
      item: { context: 'Вопрос', candidates: [{ text: ' да' }, { text: ' нет' }] },
    } as unknown as LlmRequest;
    const e = await estimateCost([job], {
      provider: {} as Provider,
      params: { temperature: 0, maxTokens: 1 },
      prices: { prompt: 1e6, completion: 0 },
      concurrency: 1,
    });
    expect([e.promptTokens, e.completionTokens, e.usd, e.counted]).toEqual([51, 0, 51, 'bytes']);
  });
});

describe('spentOn a journal: replies cut off past the cap stay spent', () => {
  it('counts a paid failure (its ceiling) after --retry-errors answered its request again', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'rumedbench-paid-')), 'journal.jsonl');
    const base = {
      key: 'k1',
      task: 'RuMedDaNet',
      split: 'test',
      id: '1',
      latencyMs: 1,
      at: '2026-12-07T00:00:00Z',
    };
    const cutOff = {
      ...base,
      status: 'error',
      error: 'the reply is larger than --max-reply-bytes',
      usage: { promptTokens: 1000, completionTokens: 64 },
      usageProblem: "the reply was cut off past --max-reply-bytes: counted at its request's ceiling",
    };
    const answered = {
      ...base,
      status: 'ok',
      reply: 'да',
      usage: { promptTokens: 900, completionTokens: 2 },
    };
    writeFileSync(file, `${JSON.stringify(cutOff)}\n${JSON.stringify(answered)}\n`);
    const journal = await Journal.open(file);
    const prices = { prompt: 10, completion: 30 };
    expect(journal.get('k1')?.status).toBe('ok');
    // $0.01192 for the cut-off reply, $0.00906 for the answer.
    expect(spentOn(journal.paid(), prices)).toBeCloseTo((1000 * 10 + 64 * 30 + 900 * 10 + 2 * 30) / 1e6, 12);
    expect(spentOn(journal.all(), prices)).toBeCloseTo((900 * 10 + 2 * 30) / 1e6, 12);
  });
});
