/**
 * ROUGE-L (Lin, 2004, "ROUGE: A Package for Automatic Evaluation of Summaries"): the longest common subsequence of
 * two word sequences, as an F-measure of its recall against the reference and precision against the candidate
 * (β = 1). Words are lower-cased runs of letters and digits, so punctuation and case do not count.
 */

const words = (text: string): string[] => text.toLocaleLowerCase('ru').match(/[\p{L}\p{N}]+/gu) ?? [];

/** The length of the longest common subsequence, in O(n·m) time and O(m) memory. */
export function lcsLength(a: readonly string[], b: readonly string[]): number {
  let prev = new Array<number>(b.length + 1).fill(0);
  for (const x of a) {
    const row = new Array<number>(b.length + 1).fill(0);
    for (let j = 1; j <= b.length; j++)
      row[j] =
        x === b[j - 1] ? (prev[j - 1] as number) + 1 : Math.max(prev[j] as number, row[j - 1] as number);
    prev = row;
  }
  return prev[b.length] as number;
}

export function rougeL(candidate: string, reference: string): number {
  const c = words(candidate);
  const r = words(reference);
  if (c.length === 0 || r.length === 0) return 0;
  const l = lcsLength(c, r);
  if (l === 0) return 0;
  const recall = l / r.length;
  const precision = l / c.length;
  return (2 * recall * precision) / (recall + precision);
}
