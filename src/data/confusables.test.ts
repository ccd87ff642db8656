import { describe, expect, it } from 'vitest';
import { lookAlike, skeleton } from './confusables.js';

describe('names that look alike (UTS #39 skeletons, in its spirit)', () => {
  it('finds the lookalikes a person makes by hand', () => {
    const pairs: [string, string, string][] = [
      ['Cyrillic а, е, о, р, с, х, у for Latin', 'аеорсху', 'aeopcxy'],
      ['Cyrillic capitals for Latin', 'АВЕКМНОРСТХ', 'ABEKMHOPCTX'],
      ['Cyrillic і, ј, ѕ, ԁ, һ, ӏ', 'іјѕԁһӏ', 'ijsdhl'],
      ['Greek capitals for Latin', 'ΑΒΕΖΗΙΚΜΝΟΡΤΥΧ', 'ABEZHIKMNOPTYX'],
      ['Greek small letters for Latin', 'οανρκχ', 'oavpkx'],
      ['case', 'SBER ai', 'Sber AI'],
      ['fullwidth forms (NFKC)', 'Ｓｂｅｒ ＡＩ', 'Sber AI'],
      ['ligatures and superscripts (NFKC)', 'ﬁne²', 'fine2'],
      ['a decomposed letter', 'Е\u0308лка', 'Ёлка'],
      ['zero-width characters and a run of spaces', 'Sber\u200b  AI', 'Sber AI'],
      ['a dash for a hyphen', 'Med‐Team', 'Med-Team'],
      ['digits for letters', 'B0T 1abs', 'bot labs'],
    ];
    expect(pairs.map(([what, a, b]) => [what, skeleton(a) === skeleton(b), lookAlike(a, b)])).toEqual(
      pairs.map(([what]) => [what, true, true]),
    );
  });

  it('tells different names apart, and is no lookalike of the same name', () => {
    const different: [string, string][] = [
      ['Sber AI', 'Yandex AI'],
      // A small в looks like no Latin letter, though its capital В does.
      ['в', 'b'],
      ['Модель', 'Model'],
      ['Ёлка', 'Елка'],
      ['Team 1', 'Team 2'],
    ];
    expect(different.map(([a, b]) => lookAlike(a, b))).toEqual(different.map(() => false));
    expect(lookAlike('Sber AI', 'Sber AI')).toBe(false);
  });
});
