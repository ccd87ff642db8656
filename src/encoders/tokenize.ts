/**
 * Model inputs from text, built over the model's own tokenizer (tokenizer.json) but without the conveniences that
 * silently give wrong inputs (transformers.js's pipelines drop `text_pair`, cut the end of a long pair off together
 * with the question and the final [SEP], lose token type ids when tokenizer_config.json names no class, and do not
 * align tokens to words). Here:
 * - a text or a pair is split into pieces without special tokens, truncated as Hugging Face's fast tokenizers do
 *   with `truncation="longest_first"` (both segments trimmed at their ends, the shorter kept whole if it fits),
 *   then the tokenizer's own post-processor adds the special tokens and type ids ([CLS] A [SEP] B [SEP] for BERT,
 *   <s> A </s></s> B </s> for RoBERTa);
 * - a list of words (RuMedNER) is tokenized word by word, as `is_split_into_words=True` does; a word that yields
 *   no piece becomes the unknown token, so every word has a first piece; sentences longer than the model allows
 *   are cut into windows at word boundaries, and no word is lost.
 */
import { Tokenizer } from '@huggingface/tokenizers';
import { ModelError } from '../errors.js';

/** One model input: token ids and type ids of equal length, without padding. */
export interface EncodedInput {
  ids: Int32Array;
  typeIds: Int32Array;
}

/** A window of a word-split sentence: its input and, per word it covers, the position of the word's first piece. */
export interface WordWindow extends EncodedInput {
  /** Index of the window's first word in the sentence. */
  firstWord: number;
  /** Position in `ids` of each covered word's first piece. */
  wordStarts: Int32Array;
}

export type { TextInput } from './inputs.js';

import type { TextInput } from './inputs.js';

/**
 * How much of a pair each segment keeps, as the Rust tokenizers' `longest_first` strategy decides: if the pair
 * fits, both whole; else the shorter keeps all of itself if that leaves room, and the longer gets the rest; when
 * both exceed half, the shorter gets ⌊budget/2⌋ and the longer the remainder.
 */
export function longestFirst(lengthA: number, lengthB: number, budget: number): [number, number] {
  if (lengthA + lengthB <= budget) return [lengthA, lengthB];
  const swap = lengthA > lengthB;
  let short = swap ? lengthB : lengthA;
  let long: number;
  if (short > budget) long = short;
  else long = Math.max(short, budget - short);
  if (short + long > budget) {
    short = Math.floor(budget / 2);
    long = short + (budget % 2);
  }
  const keepShort = Math.min(short, swap ? lengthB : lengthA);
  const keepLong = Math.min(long, swap ? lengthA : lengthB);
  return swap ? [keepLong, keepShort] : [keepShort, keepLong];
}

/** A special token as tokenizer_config.json names it: a string, or (older files) an object with its `content`. */
function tokenName(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as { content?: unknown }).content === 'string')
    return (value as { content: string }).content;
  return undefined;
}

export class EncoderTokenizer {
  readonly padId: number;
  readonly unkToken: string;
  /** Special tokens the post-processor adds to one text and to a pair. */
  readonly specialsSingle: number;
  readonly specialsPair: number;
  /** Byte-level BPE (RoBERTa) marks a word's leading space; words are then tokenized with one, as HF does. */
  private readonly prefixSpace: boolean;
  private readonly tokenizer: Tokenizer;

  constructor(
    tokenizerJson: Record<string, unknown>,
    tokenizerConfig: Record<string, unknown>,
    private readonly source: string,
  ) {
    this.tokenizer = new Tokenizer(tokenizerJson, tokenizerConfig);
    if (!this.tokenizer.post_processor)
      throw new ModelError(
        source,
        'tokenizer.json has no post_processor: cannot tell where [CLS] and [SEP] go',
      );
    this.specialsSingle = this.postProcess([], undefined).tokens.length;
    this.specialsPair = this.postProcess([], []).tokens.length;
    const model = tokenizerJson.model as { unk_token?: string } | undefined;
    this.unkToken = tokenName(tokenizerConfig.unk_token) ?? model?.unk_token ?? '[UNK]';
    // Padding never reaches a real token (the attention mask hides it), but its id must exist in the embeddings.
    const pad = tokenName(tokenizerConfig.pad_token);
    const padId = [pad, '[PAD]', '<pad>']
      .map((t) => (t === undefined ? undefined : this.tokenizer.token_to_id(t)))
      .find((id) => id !== undefined);
    if (padId === undefined)
      throw new ModelError(
        source,
        `no pad token in the vocabulary (tokenizer_config.json pad_token: ${pad ?? 'none'})`,
      );
    this.padId = padId;
    this.prefixSpace = JSON.stringify(tokenizerJson.pre_tokenizer ?? {}).includes('"ByteLevel"');
  }

  private postProcess(a: string[], b: string[] | undefined): { tokens: string[]; typeIds: number[] } {
    const out = this.tokenizer.post_processor?.post_process(a, b ?? null, { add_special_tokens: true });
    if (!out) throw new ModelError(this.source, 'the tokenizer has no post-processor');
    return { tokens: out.tokens, typeIds: out.token_type_ids ?? out.tokens.map(() => 0) };
  }

  /** Pieces of a text, without special tokens. */
  pieces(text: string): string[] {
    return this.tokenizer.tokenize(text, { add_special_tokens: false });
  }

  private toInput(tokens: readonly string[], typeIds: readonly number[]): EncodedInput {
    const ids = new Int32Array(tokens.length);
    tokens.forEach((t, i) => {
      const id = this.tokenizer.token_to_id(t);
      if (id === undefined) throw new ModelError(this.source, `token "${t}" is not in the vocabulary`);
      ids[i] = id;
    });
    return { ids, typeIds: Int32Array.from(typeIds) };
  }

  /** A text, or a pair encoded as a pair, truncated to `maxLength` tokens including special tokens. */
  encode(input: TextInput, maxLength: number): EncodedInput {
    if (typeof input === 'string') {
      const a = this.pieces(input);
      const kept = a.slice(0, Math.max(0, maxLength - this.specialsSingle));
      const out = this.postProcess(kept, undefined);
      return this.toInput(out.tokens, out.typeIds);
    }
    const a = this.pieces(input[0]);
    const b = this.pieces(input[1]);
    const [keepA, keepB] = longestFirst(a.length, b.length, Math.max(0, maxLength - this.specialsPair));
    const out = this.postProcess(a.slice(0, keepA), b.slice(0, keepB));
    return this.toInput(out.tokens, out.typeIds);
  }

  /** A sentence given as words: windows of whole words, each word's first piece located. */
  encodeWords(words: readonly string[], maxLength: number): WordWindow[] {
    const budget = maxLength - this.specialsSingle;
    if (budget < 1) throw new ModelError(this.source, `max length ${maxLength} leaves no room for a word`);
    const perWord = words.map((w) => {
      const p = this.pieces(this.prefixSpace ? ` ${w}` : w);
      // A word of characters the normalizer drops (a lone control character) still needs a position.
      return p.length > 0 ? p.slice(0, budget) : [this.unkToken];
    });
    // Where the post-processor puts the first piece of sequence A (1 after [CLS]; 0 without a prefix token).
    const offset = this.postProcess(['\u0000'], undefined).tokens.indexOf('\u0000');
    const windows: WordWindow[] = [];
    let start = 0;
    while (start < words.length) {
      const pieces: string[] = [];
      const starts: number[] = [];
      let w = start;
      while (w < words.length && pieces.length + (perWord[w] as string[]).length <= budget) {
        starts.push(offset + pieces.length);
        pieces.push(...(perWord[w] as string[]));
        w++;
      }
      const out = this.postProcess(pieces, undefined);
      windows.push({
        ...this.toInput(out.tokens, out.typeIds),
        firstWord: start,
        wordStarts: Int32Array.from(starts),
      });
      start = w;
    }
    return windows;
  }
}
