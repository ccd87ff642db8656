/**
 * Planning a human evaluation campaign, as pure functions: which items (all, or a seeded sample stratified by gold
 * label where the gold is known), and who answers which (every item by `overlap` distinct annotators, every
 * annotator a fair share, the overlapping items spread over the pairs of annotators). Deterministic given the seed.
 */
import { createRng, type Rng } from '../../metrics/rng.js';

function shuffle<T>(xs: readonly T[], rng: Rng): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

/**
 * `n` of the items, or all of them; stratified by `label` where labels are given: each label gets its share of `n`
 * by largest remainder, then a seeded draw within it. The result keeps a seeded order (the order annotators meet it).
 */
export function sampleItems(
  items: readonly { id: string; label?: string }[],
  n: number | 'all',
  seed: number,
): string[] {
  const rng = createRng(seed);
  if (n === 'all' || n >= items.length) return shuffle(items, rng).map((i) => i.id);
  if (n <= 0) return [];
  const strata = new Map<string, string[]>();
  for (const it of items) {
    const key = it.label ?? '';
    strata.set(key, [...(strata.get(key) ?? []), it.id]);
  }
  const keys = [...strata.keys()].sort();
  const exact = keys.map((k) => ((strata.get(k) as string[]).length * n) / items.length);
  const take = exact.map(Math.floor);
  const order = keys
    .map((_, i) => i)
    .sort(
      (a, b) =>
        (exact[b] as number) - (take[b] as number) - ((exact[a] as number) - (take[a] as number)) || a - b,
    );
  for (let r = n - take.reduce((s, x) => s + x, 0), i = 0; r > 0; r--, i++) {
    const k = order[i % order.length] as number;
    take[k] = (take[k] as number) + 1;
  }
  const chosen = keys.flatMap((k, i) => shuffle(strata.get(k) as string[], rng).slice(0, take[i]));
  return shuffle(chosen, rng);
}

/**
 * Gives each item to `overlap` distinct annotators. Each item goes to the least-loaded annotators (so loads differ by
 * at most one), and among equally loaded ones to those who have shared the fewest items with the ones already chosen
 * (so the overlap spreads over every pair, which the pairwise kappas need), ties broken by a seeded order.
 * Returns each annotator's queue, in item order.
 */
export function assignItems(
  items: readonly string[],
  annotators: number,
  overlap: number,
  seed: number,
): string[][] {
  if (!Number.isInteger(overlap) || overlap < 1 || overlap > annotators) {
    throw new RangeError(
      `the overlap must be between 1 and the number of annotators (${annotators}), got ${overlap}`,
    );
  }
  const rng = createRng(seed ^ 0x5bd1e995);
  const load = new Array<number>(annotators).fill(0);
  const together = Array.from({ length: annotators }, () => new Array<number>(annotators).fill(0));
  const queues: string[][] = Array.from({ length: annotators }, () => []);
  for (const item of items) {
    const tiebreak = shuffle(
      Array.from({ length: annotators }, (_, i) => i),
      rng,
    );
    const rankOf = new Map(tiebreak.map((a, r) => [a, r]));
    const chosen: number[] = [];
    while (chosen.length < overlap) {
      let best = -1;
      let bestKey: [number, number, number] = [Infinity, Infinity, Infinity];
      for (let a = 0; a < annotators; a++) {
        if (chosen.includes(a)) continue;
        const shared = chosen.reduce((s, c) => s + (together[a]?.[c] ?? 0), 0);
        const key: [number, number, number] = [load[a] as number, shared, rankOf.get(a) as number];
        if (
          key[0] < bestKey[0] ||
          (key[0] === bestKey[0] && (key[1] < bestKey[1] || (key[1] === bestKey[1] && key[2] < bestKey[2])))
        ) {
          best = a;
          bestKey = key;
        }
      }
      chosen.push(best);
    }
    for (const a of chosen) {
      load[a] = (load[a] as number) + 1;
      queues[a]?.push(item);
      for (const c of chosen)
        if (c !== a) (together[a] as number[])[c] = ((together[a] as number[])[c] as number) + 1;
    }
  }
  return queues;
}
