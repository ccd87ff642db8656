/** Compressed sparse row matrices: the shape scikit-learn's vectorizers return, in typed arrays. */

export interface CsrMatrix {
  readonly rows: number;
  readonly cols: number;
  /** Row r's entries are indptr[r] .. indptr[r + 1] - 1. */
  readonly indptr: Int32Array;
  readonly indices: Int32Array;
  readonly data: Float64Array;
}

/** Dot product of row r of `x` with a dense vector. */
export function rowDot(x: CsrMatrix, r: number, w: ArrayLike<number>): number {
  let s = 0;
  const end = x.indptr[r + 1] as number;
  for (let k = x.indptr[r] as number; k < end; k++)
    s += (x.data[k] as number) * (w[x.indices[k] as number] as number);
  return s;
}

/** Squared L2 norm of row r. */
export function rowNorm2(x: CsrMatrix, r: number): number {
  let s = 0;
  const end = x.indptr[r + 1] as number;
  for (let k = x.indptr[r] as number; k < end; k++) s += (x.data[k] as number) ** 2;
  return s;
}

/** Rows `r` of `x` as a new matrix. */
export function selectRows(x: CsrMatrix, rows: readonly number[]): CsrMatrix {
  const indptr = new Int32Array(rows.length + 1);
  let nnz = 0;
  rows.forEach((r, i) => {
    nnz += (x.indptr[r + 1] as number) - (x.indptr[r] as number);
    indptr[i + 1] = nnz;
  });
  const indices = new Int32Array(nnz);
  const data = new Float64Array(nnz);
  rows.forEach((r, i) => {
    const from = x.indptr[r] as number;
    const to = x.indptr[r + 1] as number;
    indices.set(x.indices.subarray(from, to), indptr[i] as number);
    data.set(x.data.subarray(from, to), indptr[i] as number);
  });
  return { rows: rows.length, cols: x.cols, indptr, indices, data };
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
