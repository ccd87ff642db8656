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
import { type Gemm, K_SLICE } from './lstm-gemm.js';

/**
 * C[m×n] += A[m×k] · B[n×k]ᵀ: dot products of rows, both operands read contiguously. Every product of the network,
 * forward and backward, is put in this form (the backward pass transposes an operand once per sequence batch rather
 * than scattering rows into C), and each pass of the inner loop computes a 2×4 block of C from registers.
 */
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
  let i = 0;
  for (; i + 1 < m; i += 2) {
    const a0 = aOff + i * lda;
    const a1 = a0 + lda;
    const c0 = cOff + i * ldc;
    const c1 = c0 + ldc;
    let j = 0;
    for (; j + 3 < n; j += 4) {
      const b0 = bOff + j * ldb;
      const b1 = b0 + ldb;
      const b2 = b1 + ldb;
      const b3 = b2 + ldb;
      let s00 = 0;
      let s01 = 0;
      let s02 = 0;
      let s03 = 0;
      let s10 = 0;
      let s11 = 0;
      let s12 = 0;
      let s13 = 0;
      for (let p = 0; p < k; p++) {
        const x0 = a[a0 + p] as number;
        const x1 = a[a1 + p] as number;
        const y0 = b[b0 + p] as number;
        const y1 = b[b1 + p] as number;
        const y2 = b[b2 + p] as number;
        const y3 = b[b3 + p] as number;
        s00 += x0 * y0;
        s01 += x0 * y1;
        s02 += x0 * y2;
        s03 += x0 * y3;
        s10 += x1 * y0;
        s11 += x1 * y1;
        s12 += x1 * y2;
        s13 += x1 * y3;
      }
      c[c0 + j] = (c[c0 + j] as number) + s00;
      c[c0 + j + 1] = (c[c0 + j + 1] as number) + s01;
      c[c0 + j + 2] = (c[c0 + j + 2] as number) + s02;
      c[c0 + j + 3] = (c[c0 + j + 3] as number) + s03;
      c[c1 + j] = (c[c1 + j] as number) + s10;
      c[c1 + j + 1] = (c[c1 + j + 1] as number) + s11;
      c[c1 + j + 2] = (c[c1 + j + 2] as number) + s12;
      c[c1 + j + 3] = (c[c1 + j + 3] as number) + s13;
    }
    for (; j < n; j++) {
      const br = bOff + j * ldb;
      let s0 = 0;
      let s1 = 0;
      for (let p = 0; p < k; p++) {
        const y = b[br + p] as number;
        s0 += (a[a0 + p] as number) * y;
        s1 += (a[a1 + p] as number) * y;
      }
      c[c0 + j] = (c[c0 + j] as number) + s0;
      c[c1 + j] = (c[c1 + j] as number) + s1;
    }
  }
  for (; i < m; i++) {
    const ar = aOff + i * lda;
    const cr = cOff + i * ldc;
    for (let j = 0; j < n; j++) {
      const br = bOff + j * ldb;
      let s = 0;
      for (let p = 0; p < k; p++) s += (a[ar + p] as number) * (b[br + p] as number);
      c[cr + j] = (c[cr + j] as number) + s;
    }
  }
}

/**
 * The transpose of the m×n block at `off` (row stride `ld`) of `a`, as a contiguous n×m array: the start of `into`
 * where given (at least n·m long), a new array otherwise.
 */
export function transpose(
  m: number,
  n: number,
  a: Float32Array,
  off: number,
  ld: number,
  into?: Float32Array,
): Float32Array {
  const t = into ?? new Float32Array(n * m);
  // Tiles of 32×32 keep both sides of the copy in cache.
  for (let i0 = 0; i0 < m; i0 += 32)
    for (let j0 = 0; j0 < n; j0 += 32) {
      const i1 = Math.min(m, i0 + 32);
      const j1 = Math.min(n, j0 + 32);
      for (let i = i0; i < i1; i++) {
        const r = off + i * ld;
        for (let j = j0; j < j1; j++) t[j * m + i] = a[r + j] as number;
      }
    }
  return t;
}

const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));

/**
 * Zero for |x| < 1e-30, x otherwise. Backpropagated through hundreds of steps, a gradient shrinks geometrically
 * into float32's subnormal range (below 1.2e-38), where every x86 multiply and add on it takes some hundred cycles
 * (WebAssembly cannot switch on flush-to-zero): measured, RuMedDaNet's first batch took 4.2x the CPU time without this. Values
 * this far below any gradient that moves a weight (Adam's steps are ~1e-3 of it, eps 1e-8) change nothing.
 */
const TINY = 1e-30;

/** Rows per slice of the weight gradients' products: {@link Gemm.abt}'s k slice. */
const ROW_SLICE = K_SLICE;
const flush = (x: number): number => (x < TINY && x > -TINY ? 0 : x);

/**
 * A zeroed Float32Array on a SharedArrayBuffer: every array a direction reads or writes (weights, gradients,
 * inputs, outputs, tapes) is one, so that either thread of ./lstm-threads.ts can run either direction in place.
 */
export function sharedFloats(n: number): Float32Array {
  return new Float32Array(new SharedArrayBuffer(4 * n));
}

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
    wIh: sharedFloats(g * input),
    wHh: sharedFloats(g * hidden),
    bIh: sharedFloats(g),
    bHh: sharedFloats(g),
    gWIh: sharedFloats(g * input),
    gWHh: sharedFloats(g * hidden),
    gBIh: sharedFloats(g),
    gBHh: sharedFloats(g),
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
 * The input projection of all steps is one product; only the recurrent product is per step. The tape goes
 * `into` the arrays given (`[T·B, 4H]` and `[T·B, H]`, every element overwritten), or new ones.
 */
export function lstmForward(
  gemm: Gemm,
  cell: LstmCell,
  x: Float32Array,
  steps: number,
  batch: number,
  reverse: boolean,
  out: Slot,
  into?: { gates: Float32Array; cells: Float32Array },
): LstmTape {
  const H = cell.hidden;
  const G = 4 * H;
  const rows = steps * batch;
  const gates = into?.gates ?? sharedFloats(rows * G);
  for (let r = 0; r < rows; r++) {
    const o = r * G;
    for (let j = 0; j < G; j++) gates[o + j] = (cell.bIh[j] as number) + (cell.bHh[j] as number);
  }
  gemm.abt(rows, G, cell.input, x, 0, cell.input, cell.wIh, 0, cell.input, gates, 0, G);
  const cells = into?.cells ?? sharedFloats(rows * H);
  gemm.pin(G, H, cell.wHh, 0, H);
  const { data: hs, col, stride } = out;
  for (let s = 0; s < steps; s++) {
    const t = reverse ? steps - 1 - s : s;
    const prev = reverse ? t + 1 : t - 1;
    if (s > 0) gemm.abtPinned(batch, hs, prev * batch * stride + col, stride, gates, t * batch * G, G);
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
 * h_t (the next layer's and the head's contributions, already summed), where any step has one; `dFinal` (`[B, ·]`
 * rows) dLoss/dh of the direction's final state, PyTorch's `h_n` (the last step of a forward direction, the first
 * of a reversed one), where the loss reads it. A head that reads only `h_n` thus needs no `[T·B, 2H]` array of
 * zeros. Adds the weight gradients into the cell's gradient arrays and dLoss/dx into `dx` (`[T·B, In]`) where
 * given. `out` is the forward pass's output slot (h_{t-1}).
 */
export function lstmBackward(
  gemm: Gemm,
  cell: LstmCell,
  tape: LstmTape,
  x: Float32Array,
  out: Slot,
  dOut: Slot | undefined,
  dFinal: Slot | undefined,
  dx: Float32Array | undefined,
): void {
  const H = cell.hidden;
  const G = 4 * H;
  const { steps, batch, reverse, gates, cells } = tape;
  const rows = steps * batch;
  const dhNext = new Float32Array(batch * H);
  const dcNext = new Float32Array(batch * H);
  // dh of the final state enters where backpropagation starts, as a later step's dh_{t-1} would.
  if (dFinal)
    for (let b = 0; b < batch; b++)
      dhNext.set(
        dFinal.data.subarray(b * dFinal.stride + dFinal.col, b * dFinal.stride + dFinal.col + H),
        b * H,
      );
  gemm.pin(H, G, transpose(G, H, cell.wHh, 0, H), 0, G);
  for (let s = steps - 1; s >= 0; s--) {
    const t = reverse ? steps - 1 - s : s;
    const prev = reverse ? t + 1 : t - 1;
    for (let b = 0; b < batch; b++) {
      const g0 = (t * batch + b) * G;
      const c0 = (t * batch + b) * H;
      const cp = (prev * batch + b) * H;
      const d0 = dOut ? (t * batch + b) * dOut.stride + dOut.col : 0;
      const n0 = b * H;
      for (let j = 0; j < H; j++) {
        const i = gates[g0 + j] as number;
        const f = gates[g0 + H + j] as number;
        const g = gates[g0 + 2 * H + j] as number;
        const o = gates[g0 + 3 * H + j] as number;
        const c = cells[c0 + j] as number;
        const tc = Math.tanh(c);
        const dh = dOut
          ? (dOut.data[d0 + j] as number) + (dhNext[n0 + j] as number)
          : (dhNext[n0 + j] as number);
        const dc = (dcNext[n0 + j] as number) + dh * o * (1 - tc * tc);
        const cPrev = s > 0 ? (cells[cp + j] as number) : 0;
        gates[g0 + j] = flush(dc * g * i * (1 - i));
        gates[g0 + H + j] = flush(dc * cPrev * f * (1 - f));
        gates[g0 + 2 * H + j] = flush(dc * i * (1 - g * g));
        gates[g0 + 3 * H + j] = flush(dh * tc * o * (1 - o));
        dcNext[n0 + j] = flush(dc * f);
      }
    }
    dhNext.fill(0);
    // dh_{t-1} = dgates_t · W_hh
    if (s > 0) gemm.abtPinned(batch, gates, t * batch * G, G, dhNext, 0, H);
  }
  // The gates now hold dLoss/d(pre-activation) of every step, and every weight gradient is one product over all
  // steps: dW_ih = dGᵀ·X, dW_hh = dGᵀ·H_prev (h_{t-1} beside step t, zero before the first), db = Σ dG. They run
  // over slices of the rows, each transposed apart, so that no transposed copy of a whole batch is ever held; a
  // slice is the products' own k slice (./lstm-gemm.ts), so the bits are those of one product over all rows.
  const In = cell.input;
  const bias = new Float64Array(G);
  // One set of slice buffers for all slices: fresh ones per slice were ~200 MiB of garbage per batch.
  const slice = Math.min(ROW_SLICE, rows);
  const dGT = new Float32Array(G * slice);
  const xT = new Float32Array(In * slice);
  const hPrevT = new Float32Array(H * slice);
  for (let r0 = 0; r0 < rows; r0 += ROW_SLICE) {
    const len = Math.min(ROW_SLICE, rows - r0);
    transpose(len, G, gates, r0 * G, G, dGT);
    transpose(len, In, x, r0 * In, In, xT);
    gemm.abt(G, In, len, dGT, 0, len, xT, 0, len, cell.gWIh, 0, In);
    hPrevT.fill(0);
    for (let r = r0; r < r0 + len; r++) {
      const t = Math.floor(r / batch);
      const b = r - t * batch;
      if (t === (reverse ? steps - 1 : 0)) continue;
      const src = ((reverse ? t + 1 : t - 1) * batch + b) * out.stride + out.col;
      for (let j = 0; j < H; j++) hPrevT[j * len + r - r0] = out.data[src + j] as number;
    }
    gemm.abt(G, H, len, dGT, 0, len, hPrevT, 0, len, cell.gWHh, 0, H);
    for (let j = 0; j < G; j++) {
      let sum = bias[j] as number;
      for (let r = 0; r < len; r++) sum += dGT[j * len + r] as number;
      bias[j] = sum;
    }
  }
  for (let j = 0; j < G; j++) {
    cell.gBIh[j] = (cell.gBIh[j] as number) + (bias[j] as number);
    cell.gBHh[j] = (cell.gBHh[j] as number) + (bias[j] as number);
  }
  if (dx)
    gemm.abt(
      rows,
      cell.input,
      G,
      gates,
      0,
      G,
      transpose(G, cell.input, cell.wIh, 0, cell.input),
      0,
      G,
      dx,
      0,
      cell.input,
    );
}
