/**
 * Names that look alike: a team "Sbеr AI" with a Cyrillic е passes for "Sber AI" on a board. Two names are
 * confusable when their skeletons are equal, as Unicode Technical Standard #39 (Unicode Security Mechanisms,
 * section 4, "Confusable Detection") defines it: skeleton(X) = NFD(each character of NFD(X) replaced by its
 * prototype), over the standard's confusables.txt. Here, in its spirit, with a small table: the Cyrillic and Greek
 * letters that look like Latin ones (both cases, since a capital В looks like B where its small в does not), after
 * NFKC (fullwidth and other compatibility forms) and case folding (a name in capitals passes for one in small letters),
 * with invisible characters dropped, runs of spaces as one, and the dashes as a hyphen-minus. It finds the lookalikes a
 * person would make by hand; the full table (thousands of entries, other scripts) would find more.
 */

/** Capitals whose small letters do not look like the Latin ones (В/в and B/b): mapped before case folding. */
const CAPITALS: Readonly<Record<string, string>> = {
  // Cyrillic
  А: 'A',
  В: 'B',
  Е: 'E',
  Ѕ: 'S',
  І: 'I',
  Ј: 'J',
  К: 'K',
  М: 'M',
  Н: 'H',
  О: 'O',
  Р: 'P',
  С: 'C',
  Т: 'T',
  У: 'Y',
  Х: 'X',
  Ү: 'Y',
  Ԛ: 'Q',
  Ԝ: 'W',
  // Greek
  Α: 'A',
  Β: 'B',
  Ε: 'E',
  Ζ: 'Z',
  Η: 'H',
  Ι: 'I',
  Κ: 'K',
  Μ: 'M',
  Ν: 'N',
  Ο: 'O',
  Ρ: 'P',
  Τ: 'T',
  Υ: 'Y',
  Χ: 'X',
};

/** Small letters (and digits) that look like Latin small letters: mapped after case folding. */
const SMALL: Readonly<Record<string, string>> = {
  // Cyrillic
  а: 'a',
  с: 'c',
  ԁ: 'd',
  е: 'e',
  һ: 'h',
  і: 'i',
  ј: 'j',
  ӏ: 'l',
  о: 'o',
  р: 'p',
  ԛ: 'q',
  ѕ: 's',
  ԝ: 'w',
  х: 'x',
  у: 'y',
  ү: 'y',
  // Greek
  α: 'a',
  ι: 'i',
  κ: 'k',
  ν: 'v',
  ο: 'o',
  ρ: 'p',
  υ: 'u',
  χ: 'x',
  // Digits that pass for letters in a name
  '0': 'o',
  '1': 'l',
};

const INVISIBLE = /\p{Default_Ignorable_Code_Point}/gu;
const DASHES = /[\u2010-\u2015\u2212\uFE58\uFE63\uFF0D]/g;
const SPACES = /\s+/gu;

/**
 * The skeleton of a name: equal skeletons, names a reader may take for one another.
 *
 * @example
 * skeleton('Sbеr AI') === skeleton('SBER ai'); // true (a Cyrillic е; case)
 * skeleton('Ｓｂｅｒ') === skeleton('Sber'); // true (fullwidth forms)
 */
export function skeleton(name: string): string {
  const folded = [...name.normalize('NFKC').replace(INVISIBLE, '')]
    .map((c) => CAPITALS[c] ?? c)
    .join('')
    .toLowerCase();
  return [...folded.normalize('NFD')]
    .map((c) => SMALL[c] ?? c)
    .join('')
    .replace(DASHES, '-')
    .replace(SPACES, ' ')
    .trim()
    .normalize('NFD');
}

/** Whether two different names look alike (the same name is not a lookalike of itself). */
export const lookAlike = (a: string, b: string): boolean => a !== b && skeleton(a) === skeleton(b);
