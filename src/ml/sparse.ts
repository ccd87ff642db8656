/** Compressed sparse row matrices: the shape scikit-learn's vectorizers return, in typed arrays. */

export interface CsrMatrix {
  readonly rows: number;
  readonly cols: number;
  /** Row r's entries are indptr[r] .. indptr[r + 1] - 1. */
  readonly indptr: Int32Array;
  readonly indices: Int32Array;
  readonly data: Float64Array;
}

/** Dense rows (all of equal width) as a CSR matrix, each value mapped by `f(value, column)`. */
export function denseToCsr(
  rows: readonly Float32Array[],
  width: number,
  f: (v: number, d: number) => number,
): CsrMatrix {
  const n = rows.length;
  const indptr = new Int32Array(n + 1);
  const indices = new Int32Array(n * width);
  const data = new Float64Array(n * width);
  rows.forEach((row, r) => {
    if (row.length !== width) throw new Error(`row ${r} has ${row.length} values, expected ${width}`);
    for (let d = 0; d < width; d++) {
      indices[r * width + d] = d;
      data[r * width + d] = f(row[d] as number, d);
    }
    indptr[r + 1] = (r + 1) * width;
  });
  return { rows: n, cols: width, indptr, indices, data };
}
