/**
 * Agreement between annotators, for human evaluation campaigns: observed agreement, Cohen's kappa for a pair,
 * Fleiss' kappa for items with the same number of raters, Krippendorff's alpha (nominal) for any number of raters
 * with missing answers, and set overlap for ranked answers. Pure functions over labels; `null` is "no answer".
 */

/** Proportion of agreeing pairs among every pair of answers given to the same item (Krippendorff's pairable values). */
export function observedAgreement(units: readonly (readonly (string | null)[])[]): {
  pairs: number;
  agreement: number;
} {
  let pairs = 0;
  let agree = 0;
  for (const u of units) {
    const v = u.filter((x): x is string => x !== null);
    for (let i = 0; i < v.length; i++) {
      for (let j = i + 1; j < v.length; j++) {
        pairs++;
        if (v[i] === v[j]) agree++;
      }
    }
  }
  return { pairs, agreement: pairs === 0 ? Number.NaN : agree / pairs };
}

/**
 * Cohen's kappa of two annotators over the items both answered: κ = (p_o − p_e) / (1 − p_e), p_e from each
 * annotator's own label distribution (Cohen, 1960). NaN when fewer than one common item or p_e = 1.
 */
export function cohenKappa(
  a: readonly (string | null)[],
  b: readonly (string | null)[],
): { n: number; observed: number; kappa: number } {
  const pa = new Map<string, number>();
  const pb = new Map<string, number>();
  let n = 0;
  let agree = 0;
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = a[i];
    const y = b[i];
    if (x === null || x === undefined || y === null || y === undefined) continue;
    n++;
    if (x === y) agree++;
    pa.set(x, (pa.get(x) ?? 0) + 1);
    pb.set(y, (pb.get(y) ?? 0) + 1);
  }
  if (n === 0) return { n, observed: Number.NaN, kappa: Number.NaN };
  const po = agree / n;
  let pe = 0;
  for (const [label, count] of pa) pe += (count / n) * ((pb.get(label) ?? 0) / n);
  return { n, observed: po, kappa: pe === 1 ? Number.NaN : (po - pe) / (1 - pe) };
}

/**
 * Fleiss' kappa (Fleiss, 1971) from an items × categories table of counts; every item must have the same number
 * of ratings, at least two.
 */
export function fleissKappa(counts: readonly (readonly number[])[]): number {
  const items = counts.length;
  if (items === 0) return Number.NaN;
  const raters = (counts[0] ?? []).reduce((s, x) => s + x, 0);
  if (raters < 2 || counts.some((row) => row.reduce((s, x) => s + x, 0) !== raters)) {
    throw new Error('Fleiss kappa needs the same number (at least 2) of ratings for every item');
  }
  const categories = (counts[0] ?? []).length;
  let pBar = 0;
  const pj = new Array<number>(categories).fill(0);
  for (const row of counts) {
    let sq = 0;
    row.forEach((x, j) => {
      sq += x * x;
      pj[j] = (pj[j] as number) + x;
    });
    pBar += (sq - raters) / (raters * (raters - 1));
  }
  pBar /= items;
  const pe = pj.reduce((s, x) => s + (x / (items * raters)) ** 2, 0);
  return pe === 1 ? Number.NaN : (pBar - pe) / (1 - pe);
}

/**
 * Krippendorff's alpha for nominal data (Krippendorff, 2011, "Computing Krippendorff's alpha-reliability"): units ×
 * coders, `null` for a missing value; units with fewer than two values are not pairable and are left out.
 * α = 1 − (n − 1) · Σ_{c≠k} o_ck / Σ_{c≠k} n_c n_k, with o the coincidence matrix.
 */
export function krippendorffAlpha(units: readonly (readonly (string | null)[])[]): number {
  const o = new Map<string, Map<string, number>>();
  const add = (c: string, k: string, w: number) => {
    let row = o.get(c);
    if (!row) {
      row = new Map();
      o.set(c, row);
    }
    row.set(k, (row.get(k) ?? 0) + w);
  };
  for (const u of units) {
    const v = u.filter((x): x is string => x !== null);
    const m = v.length;
    if (m < 2) continue;
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < m; j++) if (i !== j) add(v[i] as string, v[j] as string, 1 / (m - 1));
    }
  }
  const nc = new Map<string, number>();
  for (const [c, row] of o)
    nc.set(
      c,
      [...row.values()].reduce((s, x) => s + x, 0),
    );
  const n = [...nc.values()].reduce((s, x) => s + x, 0);
  if (n <= 1) return Number.NaN;
  let disagreeObserved = 0;
  for (const [c, row] of o) for (const [k, w] of row) if (c !== k) disagreeObserved += w;
  let disagreeExpected = 0;
  for (const [c, a] of nc) for (const [k, b] of nc) if (c !== k) disagreeExpected += a * b;
  if (disagreeExpected === 0) return Number.NaN;
  return 1 - ((n - 1) * disagreeObserved) / disagreeExpected;
}

/** |A ∩ B| / |A ∪ B| of two answer sets (1 when both are empty). */
export function jaccard(a: readonly string[], b: readonly string[]): number {
  const sa = new Set(a);
  const sb = new Set(b);
  const union = new Set([...sa, ...sb]).size;
  if (union === 0) return 1;
  let inter = 0;
  for (const x of sa) if (sb.has(x)) inter++;
  return inter / union;
}
