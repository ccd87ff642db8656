/**
 * The BiLSTM network of the paper's recurrent baseline (upstream `code/bilstm`), its loss and its optimisers:
 * embeddings → a stack of bidirectional LSTM layers (./lstm.ts) → a linear head, either over the first layer's final
 * states (`h_n[0]` and `h_n[1]` of PyTorch's `nn.LSTM`, what upstream's classifiers read) or over every token's
 * top-layer state (the tagger). Float32Array parameters with their gradients beside them; every random draw
 * (initialisation, dropout) comes from the caller's seeded generator (src/metrics/rng.ts).
 */
import type { Rng } from '../metrics/rng.js';
import { gemmABt, type LstmCell, type LstmTape, lstmCell, sharedFloats, transpose } from './lstm.js';
import { type LayerRunner, LocalLayers, ThreadedLayers } from './lstm-threads.js';

export interface BiLstmConfig {
  vocab: number;
  embedding: number;
  hidden: number;
  /** Bidirectional layers computed. */
  layers: number;
  outputs: number;
  /**
   * `final-states`: one prediction per sequence, from the first layer's last forward and last backward states
   * (upstream's `h_n[0]`, `h_n[1]`); `per-token`: one per step, from the top layer's state there.
   */
  head: 'final-states' | 'per-token';
  /** An embedding row that stays zero and never learns (nn.Embedding's `padding_idx`). */
  paddingIdx?: number;
  /** Dropout probabilities while training: on embeddings, between layers, on the head's input. */
  dropout?: { embedding?: number; between?: number; output?: number };
}

/** A parameter whose gradient is a dense array. */
export interface DenseParam {
  readonly name: string;
  readonly value: Float32Array;
  readonly grad: Float32Array;
}

export interface Param {
  readonly name: string;
  readonly value: Float32Array;
  /** Dense, or (the embedding table) the rows a batch touched; {@link denseGrad} reads either as dense. */
  readonly grad: Float32Array | RowGrad;
}

/**
 * A gradient held as the rows a batch touched, the others zero: the embedding table's, whose dense copy is the
 * vocabulary × width (19.8 MB for RuMedDaNet's 17,314 words) while a batch touches a few thousand rows. Rows are
 * summed into in the order a dense array would be, so each touched row has the dense array's bits.
 */
export class RowGrad {
  /** Where row r sits in {@link values} (−1: untouched). */
  readonly slot: Int32Array;
  /** The touched rows, in the order first touched. */
  readonly rows: number[] = [];
  private store: Float32Array;

  constructor(
    rows: number,
    readonly width: number,
  ) {
    this.slot = new Int32Array(rows).fill(-1);
    this.store = new Float32Array(width * 64);
  }

  /** The touched rows' values, row {@link slot}[r] at `slot·width`. */
  get values(): Float32Array {
    return this.store;
  }

  /** Adds `src[at, at + width)` into row `row`. */
  add(row: number, src: Float32Array, at: number): void {
    const w = this.width;
    let s = this.slot[row] as number;
    if (s < 0) {
      s = this.rows.length;
      this.slot[row] = s;
      this.rows.push(row);
      if ((s + 1) * w > this.store.length) {
        const grown = new Float32Array(Math.max(2 * this.store.length, (s + 1) * w));
        grown.set(this.store);
        this.store = grown;
      }
    }
    const o = s * w;
    for (let p = 0; p < w; p++) this.store[o + p] = (this.store[o + p] as number) + (src[at + p] as number);
  }

  clear(): void {
    for (const r of this.rows) this.slot[r] = -1;
    this.store.fill(0, 0, this.rows.length * this.width);
    this.rows.length = 0;
  }
}

/** A parameter's gradient as a dense array (a copy where it is held as rows). */
export function denseGrad(p: Param): Float32Array {
  const g = p.grad;
  if (g instanceof Float32Array) return g;
  const out = new Float32Array(p.value.length);
  for (const r of g.rows)
    out.set(
      g.values.subarray((g.slot[r] as number) * g.width, ((g.slot[r] as number) + 1) * g.width),
      r * g.width,
    );
  return out;
}

/** What one forward pass leaves for its backward pass. */
export interface NetTape {
  readonly batch: number;
  readonly steps: number;
  readonly tokens: Int32Array;
  /** Each layer's input (`[T·B, width]`, after dropout) and output (`[T·B, 2H]`). */
  readonly inputs: Float32Array[];
  readonly outputs: Float32Array[];
  readonly tapes: LstmTape[];
  /** Dropout masks (scaled keep factors) of the embeddings, each layer's output, the head's input. */
  readonly masks: (Float32Array | undefined)[];
  readonly features: Float32Array;
  /** `final-states`: `[B, C]`; `per-token`: `[T·B, C]`, time-major (row t·B + b). */
  readonly logits: Float32Array;
}

/** A normal draw (Box–Muller) from the seeded generator. */
export function normal(rng: Rng): number {
  const u = 1 - rng.next();
  const v = rng.next();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

function dropoutMask(n: number, p: number, rng: Rng): Float32Array {
  const m = new Float32Array(n);
  const keep = 1 / (1 - p);
  for (let i = 0; i < n; i++) m[i] = rng.next() < p ? 0 : keep;
  return m;
}

/** x ⊙ mask into the array `into` makes (a new one by default), or x itself where there is no mask. */
function applyMask(
  x: Float32Array,
  mask: Float32Array | undefined,
  into: () => Float32Array = () => sharedFloats(x.length),
): Float32Array {
  if (!mask) return x;
  const y = into();
  for (let i = 0; i < x.length; i++) y[i] = (x[i] as number) * (mask[i] as number);
  return y;
}

export class BiLstmNet {
  readonly embedding: Param & { readonly grad: RowGrad };
  /** Layer l's forward direction at 2l, its backward direction at 2l + 1. */
  readonly cells: LstmCell[] = [];
  readonly headWeight: DenseParam;
  readonly headBias: DenseParam;
  /** Who runs a layer's two directions: this thread alone until {@link setThreads}. */
  private runner: LayerRunner = new LocalLayers();
  /**
   * The batch-sized arrays of a pass, by role, reused by the next pass: a training batch of RuMedDaNet holds some
   * 280 MiB of them, and allocated afresh they stayed alive, garbage, until a collection came (measured: peak RSS
   * 650 MiB on one batch of 64, 0.59x PyTorch's). A tape is therefore valid until the next forward pass.
   */
  private readonly pool = new Map<string, Float32Array>();

  /** The pooled array of `role`, `n` long (zeroed where `zero`). */
  private buffer(role: string, n: number, zero = false): Float32Array {
    let b = this.pool.get(role);
    if (!b || b.buffer.byteLength < 4 * n) {
      b = sharedFloats(n);
      this.pool.set(role, b);
      return b;
    }
    const view = new Float32Array(b.buffer, 0, n);
    if (zero) view.fill(0);
    return view;
  }

  constructor(readonly config: BiLstmConfig) {
    const { vocab, embedding, hidden, layers, outputs } = config;
    const param = (name: string, n: number): DenseParam => ({
      name,
      value: new Float32Array(n),
      grad: new Float32Array(n),
    });
    this.embedding = {
      name: 'embedding',
      value: new Float32Array(vocab * embedding),
      grad: new RowGrad(vocab, embedding),
    };
    for (let l = 0; l < layers; l++) {
      const input = l === 0 ? embedding : 2 * hidden;
      this.cells.push(lstmCell(input, hidden), lstmCell(input, hidden));
    }
    this.headWeight = param('head.weight', outputs * 2 * hidden);
    this.headBias = param('head.bias', outputs);
  }

  /** Every parameter, named as PyTorch names its counterpart (`lstm.weight_ih_l0_reverse`, …). */
  params(): Param[] {
    const out: Param[] = [this.embedding];
    this.cells.forEach((c, k) => {
      const suffix = `l${k >> 1}${k & 1 ? '_reverse' : ''}`;
      out.push(
        { name: `lstm.weight_ih_${suffix}`, value: c.wIh, grad: c.gWIh },
        { name: `lstm.weight_hh_${suffix}`, value: c.wHh, grad: c.gWHh },
        { name: `lstm.bias_ih_${suffix}`, value: c.bIh, grad: c.gBIh },
        { name: `lstm.bias_hh_${suffix}`, value: c.bHh, grad: c.gBHh },
      );
    });
    out.push(this.headWeight, this.headBias);
    return out;
  }

  /**
   * Initial weights. `pytorch`: the library's defaults (embeddings N(0, 1); LSTM and linear U(−1/√fan, 1/√fan)
   * with fan H for the LSTM and the input width for the linear layer); `normal`: every weight N(0, std)
   * (upstream's tagger, std 0.1). The padding row, where there is one, is zero.
   */
  init(rng: Rng, scheme: { kind: 'pytorch' } | { kind: 'normal'; std: number }): void {
    const { hidden } = this.config;
    const fill = (a: Float32Array, draw: () => number) => {
      for (let i = 0; i < a.length; i++) a[i] = draw();
    };
    const uniform = (k: number) => () => (2 * rng.next() - 1) * k;
    if (scheme.kind === 'normal') {
      for (const p of this.params()) fill(p.value, () => normal(rng) * scheme.std);
    } else {
      fill(this.embedding.value, () => normal(rng));
      const k = 1 / Math.sqrt(hidden);
      for (const c of this.cells) for (const a of [c.wIh, c.wHh, c.bIh, c.bHh]) fill(a, uniform(k));
      const kh = 1 / Math.sqrt(2 * hidden);
      fill(this.headWeight.value, uniform(kh));
      fill(this.headBias.value, uniform(kh));
    }
    const pad = this.config.paddingIdx;
    if (pad !== undefined) {
      const e = this.config.embedding;
      this.embedding.value.fill(0, pad * e, (pad + 1) * e);
    }
  }

  /**
   * Runs each layer's backward direction on a second thread (2) or both here (1). The results are the same bits
   * either way (./lstm-threads.ts). {@link close} ends the second thread.
   */
  setThreads(threads: 1 | 2): void {
    this.runner.close();
    this.runner = threads === 2 ? new ThreadedLayers() : new LocalLayers();
  }

  close(): void {
    this.runner.close();
    this.runner = new LocalLayers();
  }

  zeroGrad(): void {
    for (const p of this.params()) {
      if (p.grad instanceof RowGrad) p.grad.clear();
      else p.grad.fill(0);
    }
  }

  /**
   * One forward pass over `tokens` (`[B, T]`, batch-first as the data come); dropout only where `rng` is given
   * (training).
   */
  forward(tokens: Int32Array, batch: number, steps: number, rng?: Rng): NetTape {
    const { embedding: E, hidden: H, layers, outputs: C, head } = this.config;
    const drop = rng ? (this.config.dropout ?? {}) : {};
    const rows = steps * batch;
    const emb = this.buffer('emb', rows * E);
    const table = this.embedding.value;
    for (let b = 0; b < batch; b++)
      for (let t = 0; t < steps; t++) {
        const id = tokens[b * steps + t] as number;
        emb.set(table.subarray(id * E, id * E + E), (t * batch + b) * E);
      }
    const masks: (Float32Array | undefined)[] = [];
    const maskOf = (n: number, p: number | undefined) =>
      rng && p !== undefined && p > 0 ? dropoutMask(n, p, rng) : undefined;
    masks.push(maskOf(emb.length, drop.embedding));
    const inputs: Float32Array[] = [applyMask(emb, masks[0], () => this.buffer('in0', rows * E))];
    const outputs: Float32Array[] = [];
    const tapes: LstmTape[] = [];
    for (let l = 0; l < layers; l++) {
      const x = inputs[l] as Float32Array;
      const out = this.buffer(`out${l}`, rows * 2 * H);
      const job = (dir: number) =>
        ({
          op: 'forward',
          cell: this.cells[2 * l + dir] as LstmCell,
          x,
          steps,
          batch,
          reverse: dir === 1,
          out: { data: out, col: dir * H, stride: 2 * H },
          into: {
            gates: this.buffer(`gates${l}.${dir}`, rows * 4 * H),
            cells: this.buffer(`cells${l}.${dir}`, rows * H),
          },
        }) as const;
      tapes.push(...(this.runner.run([job(0), job(1)]) as [LstmTape, LstmTape]));
      outputs.push(out);
      if (l + 1 < layers) {
        // PyTorch's `nn.LSTM(dropout=p)`: dropout on every layer's output but the last.
        masks.push(maskOf(out.length, drop.between));
        inputs.push(applyMask(out, masks[l + 1], () => this.buffer(`in${l + 1}`, out.length)));
      }
    }
    let features: Float32Array;
    let n: number;
    if (head === 'final-states') {
      // h_n[0]: layer 0 forward after the last step; h_n[1]: layer 0 backward after step 0 (its last).
      const out0 = outputs[0] as Float32Array;
      n = batch;
      features = new Float32Array(batch * 2 * H);
      for (let b = 0; b < batch; b++) {
        features.set(
          out0.subarray(((steps - 1) * batch + b) * 2 * H, ((steps - 1) * batch + b) * 2 * H + H),
          b * 2 * H,
        );
        features.set(out0.subarray(b * 2 * H + H, b * 2 * H + 2 * H), b * 2 * H + H);
      }
    } else {
      n = rows;
      features = outputs[layers - 1] as Float32Array;
    }
    const headMask = maskOf(features.length, drop.output);
    masks.push(headMask);
    features = applyMask(features, headMask);
    const logits = new Float32Array(n * C);
    for (let r = 0; r < n; r++) logits.set(this.headBias.value, r * C);
    gemmABt(n, C, 2 * H, features, 0, 2 * H, this.headWeight.value, 0, 2 * H, logits, 0, C);
    return { batch, steps, tokens, inputs, outputs, tapes, masks, features, logits };
  }

  /** Adds dLoss/dθ for the pass `tape` into every parameter's gradient, given dLoss/dlogits. */
  backward(tape: NetTape, dLogits: Float32Array): void {
    const { embedding: E, hidden: H, layers, outputs: C, head } = this.config;
    const { batch, steps, inputs, outputs, tapes, masks, features } = tape;
    const rows = steps * batch;
    const n = head === 'final-states' ? batch : rows;
    const D = 2 * H;
    gemmABt(
      C,
      D,
      n,
      transpose(n, C, dLogits, 0, C),
      0,
      n,
      transpose(n, D, features, 0, D),
      0,
      n,
      this.headWeight.grad,
      0,
      D,
    );
    const gb = this.headBias.grad;
    for (let r = 0; r < n; r++)
      for (let c = 0; c < C; c++) gb[c] = (gb[c] as number) + (dLogits[r * C + c] as number);
    // Shared and pooled: the other thread reads it in place.
    let dFeatures = this.buffer('dFeatures', n * D, true);
    gemmABt(n, D, C, dLogits, 0, C, transpose(C, D, this.headWeight.value, 0, D), 0, C, dFeatures, 0, D);
    dFeatures = applyMask(dFeatures, masks[masks.length - 1], () => this.buffer('dHead', n * D));
    // The head's gradient: per token, dLoss/d(top layer's output) itself; from the final states, dLoss/dh_n of
    // layer 0's two directions, handed to them apart (no [T·B, 2H] array, zero but at two steps, is made).
    let dOut: Float32Array | undefined = head === 'per-token' ? dFeatures : undefined;
    for (let l = layers - 1; l >= 0; l--) {
      const x = inputs[l] as Float32Array;
      const width = l === 0 ? E : D;
      const out = outputs[l] as Float32Array;
      // Each direction's dLoss/dx apart, summed below in one order whichever thread made each.
      const dxs = [
        this.buffer(`dx${l}.0`, rows * width, true),
        this.buffer(`dx${l}.1`, rows * width, true),
      ] as const;
      const finals = head === 'final-states' && l === 0;
      const job = (dir: 0 | 1) =>
        ({
          op: 'backward',
          cell: this.cells[2 * l + dir] as LstmCell,
          tape: tapes[2 * l + dir] as LstmTape,
          x,
          out: { data: out, col: dir * H, stride: D },
          ...(dOut ? { dOut: { data: dOut, col: dir * H, stride: D } } : {}),
          ...(finals ? { dFinal: { data: dFeatures, col: dir * H, stride: D } } : {}),
          dx: dxs[dir],
        }) as const;
      this.runner.run([job(0), job(1)]);
      const [dx, dx1] = dxs;
      for (let i = 0; i < dx.length; i++) dx[i] = (dx[i] as number) + (dx1[i] as number);
      dOut = applyMask(dx, masks[l], () => this.buffer(`dIn${l}`, dx.length));
    }
    if (!dOut) throw new Error('BiLstmNet.backward: a network of no layers');
    // dOut is now dLoss/d(embedding rows), time-major: scatter it into the table's gradient.
    const g = this.embedding.grad;
    const pad = this.config.paddingIdx;
    for (let b = 0; b < batch; b++)
      for (let t = 0; t < steps; t++) {
        const id = tape.tokens[b * steps + t] as number;
        if (id === pad) continue;
        g.add(id, dOut, (t * batch + b) * E);
      }
  }
}

/**
 * Softmax cross-entropy averaged over the rows whose target is ≥ 0 (a negative target is ignored, as PyTorch's
 * `ignore_index`): loss = mean(logsumexp(z) − z_y); dLoss/dz = (softmax(z) − onehot(y)) / count.
 */
export function crossEntropy(
  logits: Float32Array,
  rows: number,
  classes: number,
  targets: Int32Array,
): { loss: number; grad: Float32Array; count: number } {
  const grad = new Float32Array(rows * classes);
  let count = 0;
  for (let r = 0; r < rows; r++) if ((targets[r] as number) >= 0) count++;
  let loss = 0;
  if (count === 0) return { loss: 0, grad, count };
  for (let r = 0; r < rows; r++) {
    const y = targets[r] as number;
    if (y < 0) continue;
    const o = r * classes;
    let max = -Infinity;
    for (let c = 0; c < classes; c++) max = Math.max(max, logits[o + c] as number);
    let sum = 0;
    for (let c = 0; c < classes; c++) sum += Math.exp((logits[o + c] as number) - max);
    const lse = max + Math.log(sum);
    loss += lse - (logits[o + y] as number);
    for (let c = 0; c < classes; c++) grad[o + c] = Math.exp((logits[o + c] as number) - lse) / count;
    grad[o + y] = (grad[o + y] as number) - 1 / count;
  }
  return { loss: loss / count, grad, count };
}

export interface AdamOptions {
  lr: number;
  beta1?: number;
  beta2?: number;
  eps?: number;
  /** Decoupled weight decay (AdamW, Loshchilov and Hutter 2019): θ ← θ(1 − lr·λ) before the Adam step. */
  weightDecay?: number;
}

/**
 * Adam (Kingma and Ba 2015) as PyTorch's `torch.optim.Adam` computes it: m ← β₁m + (1−β₁)g, v ← β₂v + (1−β₂)g²,
 * θ ← θ − (lr / (1−β₁ᵗ)) · m / (√v / √(1−β₂ᵗ) + ε); with `weightDecay`, PyTorch's `AdamW`.
 */
export class Adam {
  private readonly m: Float32Array[];
  private readonly v: Float32Array[];
  private t = 0;
  constructor(
    private readonly params: readonly Param[],
    private readonly options: AdamOptions,
  ) {
    this.m = params.map((p) => new Float32Array(p.value.length));
    this.v = params.map((p) => new Float32Array(p.value.length));
  }

  step(): void {
    const { lr, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0 } = this.options;
    this.t++;
    const step = lr / (1 - beta1 ** this.t);
    const bc2 = Math.sqrt(1 - beta2 ** this.t);
    const decay = 1 - lr * weightDecay;
    this.params.forEach((p, k) => {
      const m = this.m[k] as Float32Array;
      const v = this.v[k] as Float32Array;
      const { value, grad } = p;
      const update = (i: number, g: number) => {
        const mi = beta1 * (m[i] as number) + (1 - beta1) * g;
        const vi = beta2 * (v[i] as number) + (1 - beta2) * g * g;
        m[i] = mi;
        v[i] = vi;
        value[i] = (value[i] as number) * decay - (step * mi) / (Math.sqrt(vi) / bc2 + eps);
      };
      if (grad instanceof Float32Array) {
        for (let i = 0; i < value.length; i++) update(i, grad[i] as number);
        return;
      }
      // Rows held apart step as a dense gradient's zeros do (PyTorch's dense Adam): every row's moments decay and
      // its value moves, touched or not; only the zeros are not stored.
      const { width, slot, values } = grad;
      for (let r = 0; r < slot.length; r++) {
        const s = slot[r] as number;
        for (let q = 0; q < width; q++) update(r * width + q, s < 0 ? 0 : (values[s * width + q] as number));
      }
    });
  }
}
