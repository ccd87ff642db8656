/**
 * TF-IDF over character n-grams, matching scikit-learn's `TfidfVectorizer(analyzer='char', ngram_range=(lo, hi))`
 * with its other defaults (scikit-learn 1.2, `sklearn/feature_extraction/text.py`):
 * - preprocessing: lower-case; then every run of two or more whitespace characters becomes one space
 *   (`_white_spaces = re.compile(r"\s\s+")` in `_char_ngrams`; a single newline stays as it is);
 * - n-grams: every substring of n code points, n from lo to hi (none longer than the text);
 * - vocabulary: every n-gram of the training texts (min_df=1, max_df=1.0, no cap);
 * - weights: raw count × idf, idf = ln((1 + n) / (1 + df)) + 1 (smooth_idf), rows scaled to unit L2 norm.
 * The vocabulary is the same set as scikit-learn's; column order here is first-seen rather than sorted, which
 * changes no weight and no prediction.
 */
import { NgramIndex } from './ngram-index.js';
import type { CsrMatrix } from './sparse.js';

// Python's str.isspace() characters, which `\s` matches in Python 3 regular expressions; \x1c-\x1f (the
// information separators) are among them, hence the control characters.
// biome-ignore lint/suspicious/noControlCharactersInRegex: Python counts U+001C..U+001F as whitespace.
const WHITE_RUNS = /[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]{2,}/g;

export interface TfidfOptions {
  ngramMin: number;
  ngramMax: number;
}

/** The text as scikit-learn's char analyzer sees it, as code points (Python indexes strings by code point). */
function preprocess(text: string): Uint32Array {
  const t = text.toLowerCase().replace(WHITE_RUNS, ' ');
  const cps = new Uint32Array(t.length);
  let n = 0;
  for (let i = 0; i < t.length; i++) {
    const c = t.codePointAt(i) as number;
    cps[n++] = c;
    if (c > 0xffff) i++;
  }
  return cps.subarray(0, n);
}

/** Every n-gram of a text as a string, in scikit-learn's order (for tests and inspection; fitting never builds them). */
export function ngrams(text: string, options: TfidfOptions): string[] {
  const cps = preprocess(text);
  const out: string[] = [];
  for (let n = options.ngramMin; n <= Math.min(options.ngramMax, cps.length); n++) {
    for (let i = 0; i + n <= cps.length; i++) out.push(String.fromCodePoint(...cps.subarray(i, i + n)));
  }
  return out;
}

export interface TfidfModel {
  readonly options: TfidfOptions;
  /** n-gram → column. */
  readonly index: NgramIndex;
  readonly idf: Float64Array;
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

interface Row {
  ids: Int32Array;
  counts: Int32Array;
}

/** Scratch arrays reused from text to text: each n-gram's hash, packed code points, length and start. */
interface Scratch {
  ids: Int32Array;
  hash: Int32Array;
  len: Int32Array;
  from: Int32Array;
  keys: Int32Array;
}

function scratch(size = 4096): Scratch {
  return {
    ids: new Int32Array(size),
    hash: new Int32Array(size),
    len: new Int32Array(size),
    from: new Int32Array(size),
    keys: new Int32Array(4 * size),
  };
}

/**
 * N-grams are looked up this many at a time, after their slots have all been read once ({@link NgramIndex.touch}).
 * A lookup in a vocabulary of 800k n-grams is a cache and TLB miss; read one after another, each waits for the one
 * before, while a batch of independent reads overlaps them.
 */
const BATCH = 32;

/** Column ids and counts of one text, sorted by column; unknown n-grams are skipped (as in transform). */
function countRow(text: string, options: TfidfOptions, index: NgramIndex, grow: boolean, buf: Scratch): Row {
  const cps = preprocess(text);
  const len = cps.length;
  const need = len * (options.ngramMax - options.ngramMin + 1);
  if (buf.ids.length < need) Object.assign(buf, scratch(need * 2));
  const { ids: out, hash, len: lens, from, keys } = buf;
  // First every n-gram's hash and packed form, in the order they are looked up (and new ones numbered).
  let count = 0;
  for (let i = 0; i < len; i++) {
    // Hash and pack the n-grams starting at i incrementally: each longer one extends the shorter.
    let h = FNV_OFFSET;
    let k0 = 0;
    let k1 = 0;
    let k2 = 0;
    let k3 = 0;
    let wide = false;
    const top = Math.min(options.ngramMax, len - i);
    for (let n = 1; n <= top; n++) {
      const c = cps[i + n - 1] as number;
      h = Math.imul(h ^ c, FNV_PRIME) >>> 0;
      if (c > 0xffff) wide = true;
      const packed = c << (((n - 1) & 1) << 4);
      const word = (n - 1) >> 1;
      if (word === 0) k0 |= packed;
      else if (word === 1) k1 |= packed;
      else if (word === 2) k2 |= packed;
      else k3 |= packed;
      if (n < options.ngramMin) continue;
      hash[count] = h | 0;
      lens[count] = wide ? -n : n;
      from[count] = i;
      keys[4 * count] = k0;
      keys[4 * count + 1] = k1;
      keys[4 * count + 2] = k2;
      keys[4 * count + 3] = k3;
      count++;
    }
  }
  let k = 0;
  for (let b = 0; b < count; b += BATCH) {
    const e = Math.min(count, b + BATCH);
    index.touch(hash, b, e);
    for (let q = b; q < e; q++) {
      const l = lens[q] as number;
      const id = index.lookupPacked(
        cps,
        from[q] as number,
        l < 0 ? -l : l,
        hash[q] as number,
        l,
        keys[4 * q] as number,
        keys[4 * q + 1] as number,
        keys[4 * q + 2] as number,
        keys[4 * q + 3] as number,
        grow,
      );
      if (id >= 0) out[k++] = id;
    }
  }
  const sorted = out.subarray(0, k).sort();
  let distinct = 0;
  for (let i = 0; i < k; i++) if (i === 0 || sorted[i] !== sorted[i - 1]) distinct++;
  const ids = new Int32Array(distinct);
  const counts = new Int32Array(distinct);
  let j = -1;
  for (let i = 0; i < k; i++) {
    if (i === 0 || sorted[i] !== sorted[i - 1]) ids[++j] = sorted[i] as number;
    counts[j] = (counts[j] as number) + 1;
  }
  return { ids, counts };
}

/** `shared`: the arrays in SharedArrayBuffers (see {@link fitTransform}). */
function toCsr(rows: Row[], idf: Float64Array, shared = false): CsrMatrix {
  const Buf = shared ? SharedArrayBuffer : ArrayBuffer;
  const indptr = new Int32Array(new Buf(4 * (rows.length + 1)));
  for (let r = 0; r < rows.length; r++) indptr[r + 1] = (indptr[r] as number) + (rows[r]?.ids.length ?? 0);
  const nnz = indptr[rows.length] as number;
  const indices = new Int32Array(new Buf(4 * nnz));
  const data = new Float64Array(new Buf(8 * nnz));
  rows.forEach((row, r) => {
    const base = indptr[r] as number;
    let norm = 0;
    for (let i = 0; i < row.ids.length; i++) {
      const v = (row.counts[i] as number) * (idf[row.ids[i] as number] as number);
      indices[base + i] = row.ids[i] as number;
      data[base + i] = v;
      norm += v * v;
    }
    // scikit-learn's normalize() leaves an all-zero row as it is.
    const scale = norm > 0 ? 1 / Math.sqrt(norm) : 1;
    for (let i = 0; i < row.ids.length; i++) data[base + i] = (data[base + i] as number) * scale;
  });
  return { rows: rows.length, cols: idf.length, indptr, indices, data };
}

/**
 * Learns the vocabulary and idf of `texts` and returns their TF-IDF matrix (scikit-learn's fit_transform). The
 * matrix's arrays are in SharedArrayBuffers, which training's worker threads read as they are: in ordinary ones,
 * a shared copy of the matrix would be held beside it through all of training.
 */
export function fitTransform(
  texts: readonly string[],
  options: TfidfOptions,
): { model: TfidfModel; matrix: CsrMatrix } {
  const index = new NgramIndex(1 << 20);
  const buf = scratch();
  const rows = texts.map((t) => countRow(t, options, index, true, buf));
  const df = new Int32Array(index.size);
  for (const row of rows) for (const id of row.ids) df[id] = (df[id] as number) + 1;
  const n = texts.length;
  const idf = new Float64Array(index.size);
  for (let j = 0; j < idf.length; j++) idf[j] = Math.log((1 + n) / (1 + (df[j] as number))) + 1;
  const model = { options, index, idf };
  return { model, matrix: toCsr(rows, idf, true) };
}

/** TF-IDF rows of new texts under a fitted model (scikit-learn's transform). */
export function transform(model: TfidfModel, texts: readonly string[]): CsrMatrix {
  const buf = scratch();
  return toCsr(
    texts.map((t) => countRow(t, model.options, model.index, false, buf)),
    model.idf,
  );
}

/** Rebuilds a fitted model from its vocabulary (n-grams in column order) and idf, as saved. */
export function tfidfFromVocabulary(
  options: TfidfOptions,
  vocabulary: readonly string[],
  idf: Float64Array,
): TfidfModel {
  const index = new NgramIndex(vocabulary.length);
  for (const g of vocabulary) {
    const cps = Uint32Array.from(Array.from(g, (ch) => ch.codePointAt(0) as number));
    let h = FNV_OFFSET;
    for (const c of cps) h = Math.imul(h ^ c, FNV_PRIME) >>> 0;
    index.lookup(cps, 0, cps.length, h, true);
  }
  return { options, index, idf };
}
