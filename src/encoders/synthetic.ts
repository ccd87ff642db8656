/**
 * A random BERT written from scratch in the Hugging Face / transformers.js folder layout (config.json,
 * tokenizer.json, tokenizer_config.json, onnx/model.onnx and onnx/model_quantized.onnx), for tests and benchmarks:
 * no model file is committed and nothing is downloaded. The graph is the one `optimum-cli export onnx` gives a
 * BertModel (plus, optionally, a sequence- or token-classification head), written as ONNX IR 8, opset 17; the
 * quantized variant replaces each MatMul by DynamicQuantizeLinear + MatMulInteger, as onnxruntime's
 * `quantize_dynamic` does. The WordPiece vocabulary holds every Cyrillic and Latin letter, digit and common
 * punctuation mark (alone and as a `##` continuation) and a few Russian medical words, so any RuMedBench text
 * tokenizes, mostly into letters; characters outside it become [UNK]. Same options, same bytes.
 * Not part of the package's API: it needs onnx-proto, a development dependency.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import onnxProto from 'onnx-proto';
import { createRng } from '../metrics/rng.js';

const { onnx } = onnxProto;
type Node = InstanceType<typeof onnx.NodeProto>;
type Initializer = InstanceType<typeof onnx.TensorProto>;

export interface SyntheticBertOptions {
  hiddenSize?: number;
  layers?: number;
  heads?: number;
  intermediateSize?: number;
  maxPositions?: number;
  /** Rows of the embedding table; at least the tokenizer's vocabulary (larger ones stand in for RuBERT's 120k). */
  vocabSize?: number;
  seed?: number;
  /** Add a classification head: `sequence` (pooler + linear, `logits` [batch, labels]) or `token`. */
  head?: { kind: 'sequence' | 'token'; labels: readonly string[] };
  /** Write onnx/model_quantized.onnx beside onnx/model.onnx. */
  quantized?: boolean;
  /** Leave `tokenizer_class` out of tokenizer_config.json (a trap for pipelines that infer token type ids from it). */
  omitTokenizerClass?: boolean;
  /** Graph inputs beyond the usual three (declared, unused), as some exports ask for `position_ids`. */
  extraInputs?: readonly string[];
  /**
   * More vocabulary (whole words, and `##` endings): with a real language's frequent words, texts split into as
   * few pieces as with RuBERT's vocabulary, which is what a benchmark of tokenisation needs.
   */
  extraVocabulary?: readonly string[];
}

const SPECIAL = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] as const;
const WORDS = [
  'боль',
  'голов',
  'живот',
  'кашель',
  'температура',
  'давление',
  'сердце',
  'лечение',
  'препарат',
  'таблетки',
  'врач',
  'пациент',
  'нет',
  'да',
  'не',
  'и',
  'в',
  'на',
  'при',
  'с',
] as const;
const SUFFIXES = ['##ная', '##ный', '##ой', '##ая', '##ые', '##ие', '##ть', '##ки', '##ка', '##ов'] as const;

/** The tokenizer's vocabulary, in id order. */
function syntheticVocabulary(extra: readonly string[] = []): string[] {
  const letters = [...'абвгдеёжзийклмнопрстуфхцчшщъыьэюя', ...'abcdefghijklmnopqrstuvwxyz', ...'0123456789'];
  const punctuation = [...'.,;:!?()-/%+«»"\'[]'];
  return [
    ...new Set([
      ...SPECIAL,
      ...WORDS,
      ...SUFFIXES,
      ...letters,
      ...letters.map((c) => `##${c}`),
      ...punctuation,
      ...extra,
    ]),
  ];
}

function tokenizerJson(vocab: readonly string[]): object {
  const id = (t: string) => vocab.indexOf(t);
  const special = (t: string, typeId: number) => ({ SpecialToken: { id: t, type_id: typeId } });
  const sequence = (s: 'A' | 'B', typeId: number) => ({ Sequence: { id: s, type_id: typeId } });
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: SPECIAL.map((t) => ({
      id: id(t),
      content: t,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: {
      type: 'BertNormalizer',
      clean_text: true,
      handle_chinese_chars: true,
      strip_accents: null,
      lowercase: true,
    },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [special('[CLS]', 0), sequence('A', 0), special('[SEP]', 0)],
      pair: [
        special('[CLS]', 0),
        sequence('A', 0),
        special('[SEP]', 0),
        sequence('B', 1),
        special('[SEP]', 1),
      ],
      special_tokens: {
        '[CLS]': { id: '[CLS]', ids: [id('[CLS]')], tokens: ['[CLS]'] },
        '[SEP]': { id: '[SEP]', ids: [id('[SEP]')], tokens: ['[SEP]'] },
      },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: {
      type: 'WordPiece',
      unk_token: '[UNK]',
      continuing_subword_prefix: '##',
      max_input_chars_per_word: 100,
      vocab: Object.fromEntries(vocab.map((t, i) => [t, i])),
    },
  };
}

/** Builds the ONNX graph with seeded random weights. */
class GraphBuilder {
  readonly nodes: Node[] = [];
  readonly initializers: Initializer[] = [];
  private count = 0;
  private readonly rng;
  constructor(
    seed: number,
    private readonly quantized: boolean,
  ) {
    this.rng = createRng(seed);
  }

  private name(prefix: string): string {
    this.count++;
    return `${prefix}_${this.count}`;
  }

  /** Approximately normal (sum of uniforms), standard deviation `std`. */
  private random(n: number, std: number): Float32Array {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      out[i] = (this.rng.next() + this.rng.next() + this.rng.next() - 1.5) * 2 * std;
    }
    return out;
  }

  floats(prefix: string, dims: number[], values: Float32Array): string {
    const name = this.name(prefix);
    this.initializers.push(
      onnx.TensorProto.create({
        name,
        dims,
        dataType: onnx.TensorProto.DataType.FLOAT,
        rawData: new Uint8Array(values.buffer, values.byteOffset, values.byteLength),
      }),
    );
    return name;
  }

  randomFloats(prefix: string, dims: number[], std = 0.05): string {
    return this.floats(
      prefix,
      dims,
      this.random(
        dims.reduce((a, b) => a * b, 1),
        std,
      ),
    );
  }

  constFloats(prefix: string, dims: number[], value: number): string {
    return this.floats(prefix, dims, new Float32Array(dims.reduce((a, b) => a * b, 1)).fill(value));
  }

  ints(prefix: string, values: number[]): string {
    const name = this.name(prefix);
    const data = BigInt64Array.from(values, BigInt);
    this.initializers.push(
      onnx.TensorProto.create({
        name,
        dims: [values.length],
        dataType: onnx.TensorProto.DataType.INT64,
        rawData: new Uint8Array(data.buffer),
      }),
    );
    return name;
  }

  private bytes(prefix: string, dims: number[], dataType: number, data: Uint8Array): string {
    const name = this.name(prefix);
    this.initializers.push(onnx.TensorProto.create({ name, dims, dataType, rawData: data }));
    return name;
  }

  op(
    type: string,
    inputs: string[],
    attributes: Record<string, number | number[]> = {},
    outputs = 1,
  ): string[] {
    const names = Array.from({ length: outputs }, () => this.name(type.toLowerCase()));
    this.nodes.push(
      onnx.NodeProto.create({
        opType: type,
        input: inputs,
        output: names,
        name: this.name(`${type}_node`),
        attribute: Object.entries(attributes).map(([name, v]) =>
          Array.isArray(v)
            ? onnx.AttributeProto.create({ name, ints: v, type: onnx.AttributeProto.AttributeType.INTS })
            : Number.isInteger(v)
              ? onnx.AttributeProto.create({ name, i: v, type: onnx.AttributeProto.AttributeType.INT })
              : onnx.AttributeProto.create({ name, f: v, type: onnx.AttributeProto.AttributeType.FLOAT }),
        ),
      }),
    );
    return names;
  }

  one(type: string, inputs: string[], attributes: Record<string, number | number[]> = {}): string {
    return this.op(type, inputs, attributes)[0] as string;
  }

  /** x · W + b with W of shape [rows, cols]; quantized as onnxruntime's dynamic quantization writes it. */
  linear(x: string, rows: number, cols: number): string {
    const w = this.random(rows * cols, 0.05);
    const bias = this.randomFloats('bias', [cols], 0.02);
    if (!this.quantized)
      return this.one('Add', [this.one('MatMul', [x, this.floats('weight', [rows, cols], w)]), bias]);
    let lo = 0;
    let hi = 0;
    for (const v of w) {
      lo = Math.min(lo, v);
      hi = Math.max(hi, v);
    }
    const scale = (hi - lo) / 255 || 1;
    const zero = Math.round(-lo / scale);
    const q = Uint8Array.from(w, (v) => Math.max(0, Math.min(255, Math.round(v / scale) + zero)));
    const wq = this.bytes('weight_quantized', [rows, cols], onnx.TensorProto.DataType.UINT8, q);
    const wZero = this.bytes('weight_zero_point', [], onnx.TensorProto.DataType.UINT8, Uint8Array.of(zero));
    const wScale = this.floats('weight_scale', [], Float32Array.of(scale));
    const [xq, xScale, xZero] = this.op('DynamicQuantizeLinear', [x], {}, 3) as [string, string, string];
    const product = this.one('MatMulInteger', [xq, wq, xZero, wZero]);
    const asFloat = this.one('Cast', [product], { to: onnx.TensorProto.DataType.FLOAT });
    const scaled = this.one('Mul', [asFloat, this.one('Mul', [xScale, wScale])]);
    return this.one('Add', [scaled, bias]);
  }

  layerNorm(x: string, size: number): string {
    return this.one(
      'LayerNormalization',
      [x, this.constFloats('ln_scale', [size], 1), this.constFloats('ln_bias', [size], 0)],
      { axis: -1, epsilon: 1e-12 },
    );
  }
}

function buildGraph(
  opts: Required<
    Omit<SyntheticBertOptions, 'head' | 'omitTokenizerClass' | 'extraVocabulary' | 'extraInputs'>
  >,
  head: SyntheticBertOptions['head'],
  quantized: boolean,
  extraInputs: readonly string[] = [],
): Uint8Array {
  const H = opts.hiddenSize;
  const heads = opts.heads;
  const dh = H / heads;
  if (!Number.isInteger(dh)) throw new Error(`hidden size ${H} is not a multiple of ${heads} heads`);
  const g = new GraphBuilder(opts.seed, quantized);
  const words = g.one('Gather', [g.randomFloats('word_embeddings', [opts.vocabSize, H], 0.5), 'input_ids']);
  const types = g.one('Gather', [g.randomFloats('token_type_embeddings', [2, H], 0.5), 'token_type_ids']);
  // Positions 0 … S − 1: the first S rows of the position table.
  const shape = g.one('Shape', ['input_ids']);
  const length = g.one('Gather', [shape, g.ints('one', [1])]);
  const positions = g.one('Slice', [
    g.randomFloats('position_embeddings', [opts.maxPositions, H], 0.5),
    g.ints('zero', [0]),
    length,
    g.ints('axis0', [0]),
  ]);
  let h = g.layerNorm(g.one('Add', [g.one('Add', [words, types]), positions]), H);
  // Additive mask: 0 where attended, −10000 where padded; [B, 1, 1, S].
  const maskFloat = g.one('Cast', ['attention_mask'], { to: onnx.TensorProto.DataType.FLOAT });
  const inverted = g.one('Sub', [g.constFloats('one_f', [], 1), maskFloat]);
  const additive = g.one('Mul', [inverted, g.constFloats('neg', [], -10000)]);
  const mask = g.one('Unsqueeze', [additive, g.ints('mask_axes', [1, 2])]);
  const splitHeads = g.ints('split_heads', [0, 0, heads, dh]);
  const mergeHeads = g.ints('merge_heads', [0, 0, H]);
  const scale = g.constFloats('attention_scale', [], 1 / Math.sqrt(dh));
  for (let layer = 0; layer < opts.layers; layer++) {
    const project = (perm: number[]) =>
      g.one('Transpose', [g.one('Reshape', [g.linear(h, H, H), splitHeads])], { perm });
    const q = project([0, 2, 1, 3]);
    const k = project([0, 2, 3, 1]);
    const v = project([0, 2, 1, 3]);
    const scores = g.one('Add', [g.one('Mul', [g.one('MatMul', [q, k]), scale]), mask]);
    const probs = g.one('Softmax', [scores], { axis: -1 });
    const context = g.one('Reshape', [
      g.one('Transpose', [g.one('MatMul', [probs, v])], { perm: [0, 2, 1, 3] }),
      mergeHeads,
    ]);
    h = g.layerNorm(g.one('Add', [h, g.linear(context, H, H)]), H);
    // GELU, exactly: x · ½ (1 + erf(x / √2)).
    const up = g.linear(h, H, opts.intermediateSize);
    const erf = g.one('Erf', [g.one('Mul', [up, g.constFloats('inv_sqrt2', [], Math.SQRT1_2)])]);
    const gelu = g.one('Mul', [
      g.one('Mul', [up, g.constFloats('half', [], 0.5)]),
      g.one('Add', [erf, g.constFloats('one_g', [], 1)]),
    ]);
    h = g.layerNorm(g.one('Add', [h, g.linear(gelu, opts.intermediateSize, H)]), H);
  }
  const outputs: { name: string; source: string; dims: (string | number)[] }[] = [];
  if (!head)
    outputs.push({ name: 'last_hidden_state', source: h, dims: ['batch_size', 'sequence_length', H] });
  else if (head.kind === 'sequence') {
    const cls = g.one('Gather', [h, g.ints('cls', [0])], { axis: 1 });
    const pooled = g.one('Tanh', [g.linear(g.one('Reshape', [cls, g.ints('flat', [0, H])]), H, H)]);
    outputs.push({
      name: 'logits',
      source: g.linear(pooled, H, head.labels.length),
      dims: ['batch_size', head.labels.length],
    });
  } else {
    outputs.push({
      name: 'logits',
      source: g.linear(h, H, head.labels.length),
      dims: ['batch_size', 'sequence_length', head.labels.length],
    });
  }
  for (const o of outputs)
    g.nodes.push(
      onnx.NodeProto.create({
        opType: 'Identity',
        input: [o.source],
        output: [o.name],
        name: `${o.name}_identity`,
      }),
    );

  const valueInfo = (name: string, type: number, dims: (string | number)[]) =>
    onnx.ValueInfoProto.create({
      name,
      type: {
        tensorType: {
          elemType: type,
          shape: { dim: dims.map((d) => (typeof d === 'string' ? { dimParam: d } : { dimValue: d })) },
        },
      },
    });
  const INT64 = onnx.TensorProto.DataType.INT64;
  const model = onnx.ModelProto.create({
    irVersion: 8,
    producerName: 'rumedbench-synthetic',
    opsetImport: [{ domain: '', version: 17 }],
    graph: onnx.GraphProto.create({
      name: 'synthetic_bert',
      node: g.nodes,
      initializer: g.initializers,
      input: ['input_ids', 'attention_mask', 'token_type_ids', ...extraInputs].map((n) =>
        valueInfo(n, INT64, ['batch_size', 'sequence_length']),
      ),
      output: outputs.map((o) => valueInfo(o.name, onnx.TensorProto.DataType.FLOAT, o.dims)),
    }),
  });
  return onnx.ModelProto.encode(model).finish();
}

/** Writes the model folder under `dir` and returns `dir`. */
export function writeSyntheticBert(dir: string, options: SyntheticBertOptions = {}): string {
  const vocab = syntheticVocabulary(options.extraVocabulary);
  const opts = {
    hiddenSize: options.hiddenSize ?? 32,
    layers: options.layers ?? 2,
    heads: options.heads ?? 4,
    intermediateSize: options.intermediateSize ?? 64,
    maxPositions: options.maxPositions ?? 128,
    vocabSize: Math.max(options.vocabSize ?? vocab.length, vocab.length),
    seed: options.seed ?? 1,
    quantized: options.quantized ?? false,
  };
  mkdirSync(join(dir, 'onnx'), { recursive: true });
  const head = options.head;
  const config: Record<string, unknown> = {
    model_type: 'bert',
    architectures: [
      head?.kind === 'sequence'
        ? 'BertForSequenceClassification'
        : head?.kind === 'token'
          ? 'BertForTokenClassification'
          : 'BertModel',
    ],
    hidden_size: opts.hiddenSize,
    num_hidden_layers: opts.layers,
    num_attention_heads: opts.heads,
    intermediate_size: opts.intermediateSize,
    max_position_embeddings: opts.maxPositions,
    vocab_size: opts.vocabSize,
    type_vocab_size: 2,
    pad_token_id: 0,
    hidden_act: 'gelu',
    layer_norm_eps: 1e-12,
  };
  if (head) {
    config.id2label = Object.fromEntries(head.labels.map((l, i) => [String(i), l]));
    config.label2id = Object.fromEntries(head.labels.map((l, i) => [l, i]));
  }
  writeFileSync(join(dir, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(tokenizerJson(vocab)));
  writeFileSync(
    join(dir, 'tokenizer_config.json'),
    `${JSON.stringify(
      {
        ...(options.omitTokenizerClass ? {} : { tokenizer_class: 'BertTokenizer' }),
        do_lower_case: true,
        model_max_length: opts.maxPositions,
        cls_token: '[CLS]',
        sep_token: '[SEP]',
        pad_token: '[PAD]',
        unk_token: '[UNK]',
        mask_token: '[MASK]',
      },
      null,
      2,
    )}\n`,
  );
  writeFileSync(join(dir, 'onnx', 'model.onnx'), buildGraph(opts, head, false, options.extraInputs));
  if (opts.quantized)
    writeFileSync(
      join(dir, 'onnx', 'model_quantized.onnx'),
      buildGraph(opts, head, true, options.extraInputs),
    );
  return dir;
}
