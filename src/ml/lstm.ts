/**
 * The numeric core of the BiLSTM baseline: dense row-major kernels with explicit leading dimensions, and one LSTM
 * layer run forward over a whole sequence and backward through time.
 *
 * Shapes are time-major: a sequence batch is `[T·B, width]`, row `t·B + b` holding step t of sequence b, so that
 * one step of the batch is B contiguous rows. The gate order and the cell are PyTorch's `nn.LSTM` (documented at
 * https://pytorch.org/docs/stable/generated/torch.nn.LSTM.html):
 *   i = σ(W_ii x + b_ii + W_hi h + b_hi), f = σ(W_if x + b_if + W_hf h + b_hf),
 *   g = tanh(W_ig x + b_ig + W_hg h + b_hg), o = σ(W_io x + b_io + W_ho h + b_ho),
 *   c' = f ⊙ c + i ⊙ g, h' = o ⊙ tanh(c'),
 * with `weight_ih` `[4H, In]` and `weight_hh` `[4H, H]` stacked in the order i, f, g, o, so that weights move
 * between PyTorch and us unchanged.
 */

/** C[m×n] += A[m×k] · B[n×k]ᵀ (dot products of rows; both operands read contiguously). */
export function gemmABt(
  m: number,
  n: number,
  k: number,
  a: Float32Array,
  aOff: number,
  lda: number,
  b: Float32Array,
  bOff: number,
  ldb: number,
  c: Float32Array,
  cOff: number,
  ldc: number,
): void {
  for (let i = 0; i < m; i++) {
    const ar = aOff + i * lda;
    const cr = cOff + i * ldc;
    let j = 0;
    // Four rows of B per pass over A's row: one load of a[p] feeds four products.
    for (; j + 3 < n; j += 4) {
      const b0 = bOff + j * ldb;
      const b1 = b0 + ldb;
      const b2 = b1 + ldb;
      const b3 = b2 + ldb;
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      for (let p = 0; p < k; p++) {
        const x = a[ar + p] as number;
        s0 += x * (b[b0 + p] as number);
        s1 += x * (b[b1 + p] as number);
        s2 += x * (b[b2 + p] as number);
        s3 += x * (b[b3 + p] as number);
      }
      c[cr + j] = (c[cr + j] as number) + s0;
      c[cr + j + 1] = (c[cr + j + 1] as number) + s1;
      c[cr + j + 2] = (c[cr + j + 2] as number) + s2;
      c[cr + j + 3] = (c[cr + j + 3] as number) + s3;
    }
    for (; j < n; j++) {
      const br = bOff + j * ldb;
      let s = 0;
      for (let p = 0; p < k; p++) s += (a[ar + p] as number) * (b[br + p] as number);
      c[cr + j] = (c[cr + j] as number) + s;
    }
  }
}

/** C[m×k] += A[m×n] · B[n×k] (rows of B added into rows of C, scaled by A's entries). */
export function gemmAB(
  m: number,
  n: number,
  k: number,
  a: Float32Array,
  aOff: number,
  lda: number,
  b: Float32Array,
  bOff: number,
  ldb: number,
  c: Float32Array,
  cOff: number,
  ldc: number,
): void {
  for (let i = 0; i < m; i++) {
    const ar = aOff + i * lda;
    const cr = cOff + i * ldc;
    for (let j = 0; j < n; j++) {
      const x = a[ar + j] as number;
      if (x === 0) continue;
      const br = bOff + j * ldb;
      for (let p = 0; p < k; p++) c[cr + p] = (c[cr + p] as number) + x * (b[br + p] as number);
    }
  }
}

/** C[n×k] += A[m×n]ᵀ · B[m×k] (the weight gradient: outer products of matching rows, summed). */
export function gemmAtB(
  m: number,
  n: number,
  k: number,
  a: Float32Array,
  aOff: number,
  lda: number,
  b: Float32Array,
  bOff: number,
  ldb: number,
  c: Float32Array,
  cOff: number,
  ldc: number,
): void {
  for (let i = 0; i < m; i++) {
    const ar = aOff + i * lda;
    const br = bOff + i * ldb;
    for (let j = 0; j < n; j++) {
      const x = a[ar + j] as number;
      if (x === 0) continue;
      const cr = cOff + j * ldc;
      for (let p = 0; p < k; p++) c[cr + p] = (c[cr + p] as number) + x * (b[br + p] as number);
    }
  }
}

const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));

/** One direction of one LSTM layer: PyTorch's four tensors, with their gradients beside them. */
export interface LstmCell {
  readonly input: number;
  readonly hidden: number;
  /** `[4H, In]`, gates i, f, g, o. */
  readonly wIh: Float32Array;
  /** `[4H, H]`. */
  readonly wHh: Float32Array;
  readonly bIh: Float32Array;
  readonly bHh: Float32Array;
  readonly gWIh: Float32Array;
  readonly gWHh: Float32Array;
  readonly gBIh: Float32Array;
  readonly gBHh: Float32Array;
}

export function lstmCell(input: number, hidden: number): LstmCell {
  const g = 4 * hidden;
  return {
    input,
    hidden,
    wIh: new Float32Array(g * input),
    wHh: new Float32Array(g * hidden),
    bIh: new Float32Array(g),
    bHh: new Float32Array(g),
    gWIh: new Float32Array(g * input),
    gWHh: new Float32Array(g * hidden),
    gBIh: new Float32Array(g),
    gBHh: new Float32Array(g),
  };
}

/** Where a layer writes its hidden states: columns `[col, col + H)` of a `[T·B, stride]` buffer. */
export interface Slot {
  readonly data: Float32Array;
  readonly col: number;
  readonly stride: number;
}

/** What the backward pass needs of a forward pass: the gates after their activations and the cell states. */
export interface LstmTape {
  readonly steps: number;
  readonly batch: number;
  readonly reverse: boolean;
  /** `[T·B, 4H]`: i, f, g, o after σ/tanh; overwritten by their pre-activation gradients in the backward pass. */
  readonly gates: Float32Array;
  /** `[T·B, H]`. */
  readonly cells: Float32Array;
}

/**
 * Runs one direction of a layer over `x` (`[T·B, In]`, time-major) from zero states, writing h_t into `out`
 * (the states of a reversed direction are written at their own step t, as PyTorch's bidirectional output is).
 * The input projection of all steps is one product; only the recurrent product is per step.
 */
export function lstmForward(
  cell: LstmCell,
  x: Float32Array,
  steps: number,
  batch: number,
  reverse: boolean,
  out: Slot,
): LstmTape {
  const H = cell.hidden;
  const G = 4 * H;
  const rows = steps * batch;
  const gates = new Float32Array(rows * G);
  for (let r = 0; r < rows; r++) {
    const o = r * G;
    for (let j = 0; j < G; j++) gates[o + j] = (cell.bIh[j] as number) + (cell.bHh[j] as number);
  }
  gemmABt(rows, G, cell.input, x, 0, cell.input, cell.wIh, 0, cell.input, gates, 0, G);
  const cells = new Float32Array(rows * H);
  const { data: hs, col, stride } = out;
  for (let s = 0; s < steps; s++) {
    const t = reverse ? steps - 1 - s : s;
    const prev = reverse ? t + 1 : t - 1;
    if (s > 0)
      gemmABt(batch, G, H, hs, prev * batch * stride + col, stride, cell.wHh, 0, H, gates, t * batch * G, G);
    for (let b = 0; b < batch; b++) {
      const g0 = (t * batch + b) * G;
      const c0 = (t * batch + b) * H;
      const cp = (prev * batch + b) * H;
      const h0 = (t * batch + b) * stride + col;
      for (let j = 0; j < H; j++) {
        const i = sigmoid(gates[g0 + j] as number);
        const f = sigmoid(gates[g0 + H + j] as number);
        const g = Math.tanh(gates[g0 + 2 * H + j] as number);
        const o = sigmoid(gates[g0 + 3 * H + j] as number);
        const c = (s > 0 ? f * (cells[cp + j] as number) : 0) + i * g;
        gates[g0 + j] = i;
        gates[g0 + H + j] = f;
        gates[g0 + 2 * H + j] = g;
        gates[g0 + 3 * H + j] = o;
        cells[c0 + j] = c;
        hs[h0 + j] = o * Math.tanh(c);
      }
    }
  }
  return { steps, batch, reverse, gates, cells };
}

/**
 * Backpropagation through time for one direction: `dOut` holds dLoss/dh_t at the same slot the forward pass wrote
 * h_t (the next layer's and the head's contributions, already summed). Adds the weight gradients into the cell's
 * gradient arrays and dLoss/dx into `dx` (`[T·B, In]`) where given. `out` is the forward pass's output slot (h_{t-1}).
 */
export function lstmBackward(
  cell: LstmCell,
  tape: LstmTape,
  x: Float32Array,
  out: Slot,
  dOut: Slot,
  dx: Float32Array | undefined,
): void {
  const H = cell.hidden;
  const G = 4 * H;
  const { steps, batch, reverse, gates, cells } = tape;
  const rows = steps * batch;
  const dhNext = new Float32Array(batch * H);
  const dcNext = new Float32Array(batch * H);
  for (let s = steps - 1; s >= 0; s--) {
    const t = reverse ? steps - 1 - s : s;
    const prev = reverse ? t + 1 : t - 1;
    for (let b = 0; b < batch; b++) {
      const g0 = (t * batch + b) * G;
      const c0 = (t * batch + b) * H;
      const cp = (prev * batch + b) * H;
      const d0 = (t * batch + b) * dOut.stride + dOut.col;
      const n0 = b * H;
      for (let j = 0; j < H; j++) {
        const i = gates[g0 + j] as number;
        const f = gates[g0 + H + j] as number;
        const g = gates[g0 + 2 * H + j] as number;
        const o = gates[g0 + 3 * H + j] as number;
        const c = cells[c0 + j] as number;
        const tc = Math.tanh(c);
        const dh = (dOut.data[d0 + j] as number) + (dhNext[n0 + j] as number);
        const dc = (dcNext[n0 + j] as number) + dh * o * (1 - tc * tc);
        const cPrev = s > 0 ? (cells[cp + j] as number) : 0;
        gates[g0 + j] = dc * g * i * (1 - i);
        gates[g0 + H + j] = dc * cPrev * f * (1 - f);
        gates[g0 + 2 * H + j] = dc * i * (1 - g * g);
        gates[g0 + 3 * H + j] = dh * tc * o * (1 - o);
        dcNext[n0 + j] = dc * f;
      }
    }
    dhNext.fill(0);
    if (s > 0) {
      const dg = t * batch * G;
      gemmAB(batch, G, H, gates, dg, G, cell.wHh, 0, H, dhNext, 0, H);
      gemmAtB(
        batch,
        G,
        H,
        gates,
        dg,
        G,
        out.data,
        prev * batch * out.stride + out.col,
        out.stride,
        cell.gWHh,
        0,
        H,
      );
    }
  }
  // The gates now hold dLoss/d(pre-activation) of every step: the input-side products are one each.
  gemmAtB(rows, G, cell.input, gates, 0, G, x, 0, cell.input, cell.gWIh, 0, cell.input);
  for (let r = 0; r < rows; r++) {
    const o = r * G;
    for (let j = 0; j < G; j++) {
      const d = gates[o + j] as number;
      cell.gBIh[j] = (cell.gBIh[j] as number) + d;
      cell.gBHh[j] = (cell.gBHh[j] as number) + d;
    }
  }
  if (dx) gemmAB(rows, G, cell.input, gates, 0, G, cell.wIh, 0, cell.input, dx, 0, cell.input);
}
