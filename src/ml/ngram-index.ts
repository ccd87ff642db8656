/**
 * An exact hash index of character n-grams (up to 8 code points) that never builds a substring. Each n-gram is
 * hashed incrementally as it is read (FNV-1a over code points) and stored packed in its hash slot, two code points
 * per 32-bit word, so a lookup touches one cache line and compares four words. N-grams with a code point above
 * U+FFFF are compared against a pool of code points instead. This makes fitting a TF-IDF vocabulary of ~800k
 * n-grams several times faster than a Map of strings.
 */

// Slots hold id + 1, so that a zero-filled table (no fill pass) is empty.
const EMPTY = 0;
/** Words per slot: hash, id, length (negative: in the pool), four words of packed code points, one spare. */
const W = 8;

export class NgramIndex {
  private table: Int32Array;
  private mask: number;
  /** Code points of entries that do not fit the packed form, and where each starts. */
  private pool: number[] = [];
  /** For each id, its slot (to rebuild strings). */
  private slotOf: Int32Array;
  size = 0;

  constructor(capacityHint = 1 << 16) {
    let cap = 1 << 10;
    while (cap < capacityHint * 2) cap <<= 1;
    this.table = new Int32Array(cap * W);
    this.mask = cap - 1;
    this.slotOf = new Int32Array(capacityHint);
  }

  /**
   * The id of `cps[from .. from + n)` with hash `h`: a new id when `insert` is set and the n-gram is unseen,
   * else -1 when unseen.
   */
  lookup(cps: Uint32Array, from: number, n: number, h: number, insert: boolean): number {
    // Pack: code points ≤ 0xFFFF, two per word; any larger one sends the n-gram to the pool.
    let k0 = 0;
    let k1 = 0;
    let k2 = 0;
    let k3 = 0;
    let wide = false;
    for (let j = 0; j < n; j++) {
      const c = cps[from + j] as number;
      if (c > 0xffff) wide = true;
      const shift = (j & 1) << 4;
      switch (j >> 1) {
        case 0:
          k0 |= c << shift;
          break;
        case 1:
          k1 |= c << shift;
          break;
        case 2:
          k2 |= c << shift;
          break;
        default:
          k3 |= c << shift;
      }
    }
    return this.lookupPacked(cps, from, n, h, wide ? -n : n, k0, k1, k2, k3, insert);
  }

  /**
   * {@link lookup} with the n-gram already packed by the caller (`len` negative where a code point is above U+FFFF),
   * which extends one packing from n to n + 1 instead of packing every n-gram afresh.
   */
  lookupPacked(
    cps: Uint32Array,
    from: number,
    n: number,
    h: number,
    len: number,
    k0: number,
    k1: number,
    k2: number,
    k3: number,
    insert: boolean,
  ): number {
    const t = this.table;
    const wide = len < 0;
    let slot = h & this.mask;
    for (;;) {
      const base = slot * W;
      const stored = t[base + 1] as number;
      if (stored === EMPTY) break;
      const id = stored - 1;
      if (t[base] === (h | 0) && t[base + 2] === len) {
        if (!wide) {
          if (t[base + 3] === k0 && t[base + 4] === k1 && t[base + 5] === k2 && t[base + 6] === k3) return id;
        } else if (this.poolEquals(t[base + 3] as number, cps, from, n)) return id;
      }
      slot = (slot + 1) & this.mask;
    }
    if (!insert) return -1;
    const id = this.size++;
    const base = slot * W;
    t[base] = h | 0;
    t[base + 1] = id + 1;
    t[base + 2] = len;
    if (wide) {
      t[base + 3] = this.pool.length;
      for (let j = 0; j < n; j++) this.pool.push(cps[from + j] as number);
    } else {
      t[base + 3] = k0;
      t[base + 4] = k1;
      t[base + 5] = k2;
      t[base + 6] = k3;
    }
    if (id >= this.slotOf.length) {
      const bigger = new Int32Array(this.slotOf.length * 2);
      bigger.set(this.slotOf);
      this.slotOf = bigger;
    }
    this.slotOf[id] = slot;
    if (this.size * 2 > this.mask + 1) this.rehash();
    return id;
  }

  /** Anything read from a touched slot, kept so that the reads are not optimised away. */
  private sink = 0;

  /**
   * Reads the first slot of each hash in `hashes[from .. to)`, and nothing else: independent reads, whose misses
   * the processor overlaps, so that the lookups that follow find the slots in cache (see `countRow` in ./tfidf.ts).
   */
  touch(hashes: Int32Array, from: number, to: number): void {
    const t = this.table;
    const mask = this.mask;
    let s = this.sink;
    for (let q = from; q < to; q++) s ^= t[((hashes[q] as number) & mask) * W + 1] as number;
    this.sink = s;
  }

  private poolEquals(start: number, cps: Uint32Array, from: number, n: number): boolean {
    for (let j = 0; j < n; j++) if (this.pool[start + j] !== cps[from + j]) return false;
    return true;
  }

  private rehash(): void {
    const old = this.table;
    const cap = (this.mask + 1) * 2;
    this.table = new Int32Array(cap * W);
    this.mask = cap - 1;
    for (let s = 0; s < old.length / W; s++) {
      const stored = old[s * W + 1] as number;
      if (stored === EMPTY) continue;
      const id = stored - 1;
      let slot = (old[s * W] as number) & this.mask;
      while (this.table[slot * W + 1] !== EMPTY) slot = (slot + 1) & this.mask;
      this.table.set(old.subarray(s * W, s * W + W), slot * W);
      this.slotOf[id] = slot;
    }
  }

  /** The n-gram with this id, as a string. */
  text(id: number): string {
    const base = (this.slotOf[id] as number) * W;
    const len = this.table[base + 2] as number;
    if (len < 0) {
      const start = this.table[base + 3] as number;
      return String.fromCodePoint(...this.pool.slice(start, start - len));
    }
    const cps: number[] = [];
    for (let j = 0; j < len; j++)
      cps.push(((this.table[base + 3 + (j >> 1)] as number) >>> ((j & 1) << 4)) & 0xffff);
    return String.fromCodePoint(...cps);
  }

  /** Every n-gram in id order. */
  texts(): string[] {
    return Array.from({ length: this.size }, (_, id) => this.text(id));
  }
}
