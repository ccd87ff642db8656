import { describe, expect, it } from 'vitest';
import { fitTransform, ngrams, tfidfFromVocabulary, transform } from './tfidf.js';

// Expected values from scikit-learn 1.2.1: TfidfVectorizer(analyzer='char', ngram_range=(3, 4)) on these texts.
const DOCS = ['Боль в горле', 'боль  в\nспине', 'Кашель 😷!'];
const OPTIONS = { ngramMin: 3, ngramMax: 4 };

function weight(texts: string[], gram: string): { idf: number; column: number[] } {
  const { model, matrix } = fitTransform(texts, OPTIONS);
  const id = model.index.texts().indexOf(gram);
  const column = Array.from({ length: matrix.rows }, (_, r) => {
    for (let k = matrix.indptr[r] as number; k < (matrix.indptr[r + 1] as number); k++) {
      if (matrix.indices[k] === id) return matrix.data[k] as number;
    }
    return 0;
  });
  return { idf: model.idf[id] as number, column };
}

describe("TF-IDF over character n-grams, as scikit-learn's TfidfVectorizer", () => {
  it('has the same vocabulary size', () => {
    expect(fitTransform(DOCS, OPTIONS).model.index.size).toBe(43);
  });

  it.each([
    ['боль', 1.2876820724517808, [0.191214731545, 0.191214731545, 0]],
    [' в ', 1.6931471805599454, [0.25142439312, 0, 0]],
    // An emoji outside the BMP is one character to Python.
    ['ль 😷', 1.6931471805599454, [0, 0, 0.284568706592]],
    // A single newline survives; the double space before it became one.
    ['в\nс', 1.6931471805599454, [0, 0.25142439312, 0]],
  ])('weights %j like scikit-learn', (gram, idf, column) => {
    const w = weight(DOCS, gram);
    expect(w.idf).toBeCloseTo(idf, 12);
    w.column.forEach((v, i) => {
      expect(v).toBeCloseTo(column[i] as number, 11);
    });
  });

  it('lower-cases, squeezes runs of whitespace, and counts code points', () => {
    expect(ngrams('Аб  В\tг😷', { ngramMin: 3, ngramMax: 3 })).toEqual([
      'аб ',
      'б в',
      ' в\t',
      'в\tг',
      '\tг😷',
    ]);
  });

  it('gives unit rows, skips unknown n-grams, and survives a save through its vocabulary', () => {
    const { model } = fitTransform(DOCS, OPTIONS);
    const x = transform(model, ['боль и кашель', 'zzz']);
    let norm = 0;
    for (let k = x.indptr[0] as number; k < (x.indptr[1] as number); k++) norm += (x.data[k] as number) ** 2;
    expect(norm).toBeCloseTo(1, 12);
    expect((x.indptr[2] as number) - (x.indptr[1] as number)).toBe(0);
    const again = tfidfFromVocabulary(OPTIONS, model.index.texts(), model.idf);
    expect(transform(again, ['боль и кашель'])).toEqual(transform(model, ['боль и кашель']));
  });
});
