/**
 * Log-likelihood scoring through node-llama-cpp on the tiny GGUF model the tests write: the trie's sums equal a direct
 * evaluation of each whole sequence, tokens are split by count (a Cyrillic case shows why not by text), and N
 * sequences in parallel give the one-sequence answers.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeTinyGguf } from '../../test/helpers/tiny-gguf.js';
import { LlamaProvider } from './llama.js';
import { buildTrie, trieInnerNodes } from './loglik.js';

describe('log-likelihood with node-llama-cpp', { timeout: 120_000 }, () => {
  let gguf: string;
  let one: LlamaProvider;
  beforeAll(async () => {
    gguf = join(mkdtempSync(join(tmpdir(), 'rumedbench-loglik-')), 'tiny.gguf');
    writeTinyGguf(gguf);
    one = await LlamaProvider.load({ modelPath: gguf, contextSize: 512 });
  });
  afterAll(async () => {
    await one?.close();
  });

  const context = 'Вопрос: помогает ли препарат?\nОтвет:';
  const continuations = [' да', ' нет', ' дальше', ' да, помогает'];

  it('splits tokens by count: the continuation alone would tokenize differently (a Cyrillic case)', () => {
    const whole = one.tokenize(context + continuations[0]);
    const ctx = one.tokenize(context);
    const alone = one.tokenize(continuations[0] as string).slice(1); // without its BOS
    expect(whole.slice(0, ctx.length)).toEqual(ctx);
    const split = whole.slice(ctx.length);
    // Byte-level tokens: " да" is a word-start mark and four UTF-8 bytes, five tokens for three characters, so a
    // split by characters (or by decoded text, which cannot end inside a letter) would cut in the wrong place; and
    // tokenized alone, the continuation gains the tokenizer's leading-space mark.
    expect(split.length).toBe(5);
    expect([...(continuations[0] as string)].length).toBe(3);
    expect(alone).not.toEqual(split);
  });

  it('sums the continuation log-probabilities: the trie equals a direct evaluation of each whole sequence', async () => {
    const trie = await one.loglik({ context, continuations });
    const separate = await one.loglik({ context, continuations }, { trie: false });
    expect(trie.tokens).toEqual(separate.tokens);
    for (let i = 0; i < continuations.length; i++) {
      expect(trie.logprobs[i]).toBeLessThan(0);
      expect(Math.abs((trie.logprobs[i] as number) - (separate.logprobs[i] as number))).toBeLessThan(1e-4);
    }
    // Shared prefixes are evaluated once: " да", " дальше" and " да, помогает" share "▁да".
    const ctxLen = one.tokenize(context).length;
    expect(separate.positions).toBe(
      continuations.length * ctxLen + trie.tokens.reduce((s, n) => s + n - 1, 0),
    );
    const conts = continuations.map((c) => one.tokenize(context + c).slice(ctxLen));
    expect(trie.positions).toBe(ctxLen + trieInnerNodes(buildTrie(conts)));
    expect(trie.positions).toBeLessThan((separate.positions as number) / 3);
  });

  it('moves the context’s trailing space to the continuation', async () => {
    const a = await one.loglik({ context, continuations: [' да'] });
    const b = await one.loglik({ context: `${context} `, continuations: ['да'] });
    expect(b.logprobs[0]).toBeCloseTo(a.logprobs[0] as number, 6);
  });

  it('gives the one-sequence scores with four sequences in parallel', async () => {
    const four = await LlamaProvider.load({ modelPath: gguf, contextSize: 2048, sequences: 4 });
    try {
      const requests = ['Да?', 'Нет?', 'Может быть?', 'Точно?', 'Почему?', 'Когда?'].map((q) => ({
        context: `Вопрос: ${q}\nОтвет:`,
        continuations: continuations.slice(0, 3),
      }));
      const parallel = await Promise.all(requests.map((r) => four.loglik(r)));
      for (const [i, r] of requests.entries()) {
        const alone = (await one.loglik(r)).logprobs as number[];
        const together = parallel[i]?.logprobs as number[];
        // The same answer; the scores move only in their last digits (batches of another size add in another order).
        expect(together.indexOf(Math.max(...together))).toBe(alone.indexOf(Math.max(...alone)));
        for (const [j, lp] of together.entries())
          expect(Math.abs(lp - (alone[j] as number))).toBeLessThan(1e-2);
      }
    } finally {
      await four.close();
    }
  });
});
