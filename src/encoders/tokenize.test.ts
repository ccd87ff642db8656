import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tinyBert } from '../../test/helpers/tiny-bert.js';
import { EncoderTokenizer, longestFirst } from './tokenize.js';

function load(dir: string): EncoderTokenizer {
  const json = (f: string) => JSON.parse(readFileSync(join(dir, f), 'utf8'));
  return new EncoderTokenizer(json('tokenizer.json'), json('tokenizer_config.json'), dir);
}

const dir = tinyBert();
const tok = load(dir);
const id = (t: string) => tok.encode(t, 8).ids[1];
const CLS = 2;
const SEP = 3;

describe('longest_first truncation (as the Rust tokenizers)', () => {
  it.each([
    [3, 4, 10, [3, 4]], // fits
    [100, 10, 50, [40, 10]], // the shorter whole, the longer the rest
    [10, 100, 50, [10, 40]],
    [100, 100, 50, [25, 25]], // both over half: halves
    [30, 31, 51, [25, 26]], // odd budget: the longer gets the extra one
    [60, 3, 0, [0, 0]],
  ])('%i + %i tokens into %i', (a, b, budget, expected) => {
    expect(longestFirst(a, b, budget)).toEqual(expected);
  });
});

describe('encoding texts, pairs and words', () => {
  it('a text: [CLS] pieces [SEP], all type 0, cut at max length with the [SEP] kept', () => {
    const e = tok.encode('Боль в голове', 128);
    expect(tok.pieces('Боль в голове')).toEqual(['боль', 'в', 'голов', '##е']);
    expect(e.ids.length).toBe(6);
    expect(Array.from(e.ids.slice(0, 4))).toEqual([CLS, id('боль'), id('в'), id('голов')]);
    expect(e.ids[5]).toBe(SEP);
    expect(Array.from(e.typeIds)).toEqual([0, 0, 0, 0, 0, 0]);
    const cut = tok.encode('боль в голове кашель', 4);
    expect(Array.from(cut.ids)).toEqual([CLS, id('боль'), id('в'), SEP]);
  });

  it('a pair: [CLS] A [SEP] B [SEP] with type ids 0 then 1', () => {
    const e = tok.encode(['боль', 'да нет'], 128);
    expect(Array.from(e.ids)).toEqual([CLS, id('боль'), SEP, id('да'), id('нет'), SEP]);
    expect(Array.from(e.typeIds)).toEqual([0, 0, 0, 1, 1, 1]);
  });

  it('a long context keeps the question and the final [SEP] (both segments trimmed at their ends)', () => {
    const context = Array.from({ length: 200 }, () => 'боль').join(' ');
    const e = tok.encode([context, 'да нет да'], 16);
    expect(e.ids.length).toBe(16);
    // 13 pieces of room: the question (3) whole, the context 10.
    expect(Array.from(e.ids.slice(-5))).toEqual([SEP, id('да'), id('нет'), id('да'), SEP]);
    expect(Array.from(e.ids.slice(0, 11))).toEqual([CLS, ...Array(10).fill(id('боль'))]);
    expect(Array.from(e.typeIds)).toEqual([...Array(12).fill(0), 1, 1, 1, 1]);
  });

  it("reads special tokens written as objects (older tokenizer_config.json files), and finds a pad token it isn't told", () => {
    const json = (f: string) => JSON.parse(readFileSync(join(dir, f), 'utf8'));
    const config = {
      ...json('tokenizer_config.json'),
      pad_token: { content: '[PAD]', lstrip: false },
      unk_token: { content: '[UNK]' },
    };
    const t = new EncoderTokenizer(json('tokenizer.json'), config, dir);
    expect(t.padId).toBe(0);
    expect(t.unkToken).toBe('[UNK]');
    const { pad_token: _, ...noPad } = json('tokenizer_config.json');
    expect(new EncoderTokenizer(json('tokenizer.json'), noPad, dir).padId).toBe(0);
  });

  it('keeps token type ids when tokenizer_config.json names no tokenizer class', () => {
    const bare = load(tinyBert({ omitTokenizerClass: true }));
    expect(Array.from(bare.encode(['боль', 'да'], 32).typeIds)).toEqual([0, 0, 0, 1, 1]);
  });

  it('words: one first piece per word, for words of several pieces and for [UNK] words', () => {
    const words = ['Головная', 'боль', '漢', ',', 'кашель'];
    const [w] = tok.encodeWords(words, 128);
    expect(w).toBeDefined();
    if (!w) return;
    expect(w.firstWord).toBe(0);
    expect(w.wordStarts.length).toBe(words.length);
    const pieces = words.map((x) => tok.pieces(x).length);
    expect(pieces[0]).toBeGreaterThan(1);
    expect(tok.pieces('漢')).toEqual(['[UNK]']);
    // Starts follow [CLS] and each word's pieces.
    let at = 1;
    pieces.forEach((n, k) => {
      expect(w.wordStarts[k]).toBe(at);
      at += n;
    });
    expect(w.ids[0]).toBe(CLS);
    expect(w.ids[w.ids.length - 1]).toBe(SEP);
  });

  it('words: a sentence longer than the model allows is cut into windows at word boundaries, no word lost', () => {
    const words = Array.from({ length: 40 }, (_, i) => (i % 2 ? 'боль' : 'голова'));
    const windows = tok.encodeWords(words, 12);
    expect(windows.length).toBeGreaterThan(1);
    const covered = windows.flatMap((w) => Array.from(w.wordStarts, (_, k) => w.firstWord + k));
    expect(covered).toEqual(words.map((_, i) => i));
    for (const w of windows) expect(w.ids.length).toBeLessThanOrEqual(12);
  });

  it('a word with no piece at all (a control character) still gets a position', () => {
    const [w] = tok.encodeWords(['\u0007', 'боль'], 32);
    expect(w?.wordStarts.length).toBe(2);
    expect(w?.ids[1]).toBe(tok.encode('漢', 8).ids[1]);
  });
});
