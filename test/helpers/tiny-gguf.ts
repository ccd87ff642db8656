/**
 * Writes a tiny GGUF model (format version 3): llama architecture, one layer, 32-dimensional embeddings, four heads,
 * a 260-token SentencePiece-style vocabulary (<unk>, <s>, </s>, the 256 byte tokens, ▁), F32 tensors of seeded random
 * values. About 115 KB: enough for node-llama-cpp to load and generate, which is what the tests check (plumbing,
 * not accuracy).
 */
import { writeFileSync } from 'node:fs';
import { createRng } from '../../src/metrics/rng.js';

const T = { u32: 4, i32: 5, f32: 6, string: 8, array: 9 } as const;

class Writer {
  private parts: Buffer[] = [];
  size = 0;
  push(b: Buffer): void {
    this.parts.push(b);
    this.size += b.length;
  }
  u32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    this.push(b);
  }
  u64(v: number): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    this.push(b);
  }
  str(s: string): void {
    const b = Buffer.from(s, 'utf8');
    this.u64(b.length);
    this.push(b);
  }
  pad(align: number): void {
    const extra = (align - (this.size % align)) % align;
    if (extra) this.push(Buffer.alloc(extra));
  }
  bytes(): Buffer {
    return Buffer.concat(this.parts);
  }
}

type Kv =
  | [string, 'u32', number]
  | [string, 'f32', number]
  | [string, 'string', string]
  | [string, 'strings', string[]]
  | [string, 'f32s', number[]]
  | [string, 'i32s', number[]];

/** Sizes of the generated model; the default is the tiny test model. */
interface GgufShape {
  embd: number;
  ff: number;
  heads: number;
  layers: number;
}

export function writeTinyGguf(
  file: string,
  seed = 1,
  shape: GgufShape = { embd: 32, ff: 64, heads: 4, layers: 1 },
): void {
  const nEmbd = shape.embd;
  const nFf = shape.ff;
  const nHead = shape.heads;
  const tokens = [
    '<unk>',
    '<s>',
    '</s>',
    ...Array.from({ length: 256 }, (_, i) => `<0x${i.toString(16).toUpperCase().padStart(2, '0')}>`),
    '▁',
  ];
  const nVocab = tokens.length;
  const kvs: Kv[] = [
    ['general.architecture', 'string', 'llama'],
    ['general.name', 'string', 'rumedbench-tiny-test'],
    ['llama.context_length', 'u32', 512],
    ['llama.embedding_length', 'u32', nEmbd],
    ['llama.block_count', 'u32', shape.layers],
    ['llama.feed_forward_length', 'u32', nFf],
    ['llama.attention.head_count', 'u32', nHead],
    ['llama.attention.head_count_kv', 'u32', nHead],
    ['llama.rope.dimension_count', 'u32', nEmbd / nHead],
    ['llama.attention.layer_norm_rms_epsilon', 'f32', 1e-5],
    ['tokenizer.ggml.model', 'string', 'llama'],
    ['tokenizer.ggml.tokens', 'strings', tokens],
    ['tokenizer.ggml.scores', 'f32s', tokens.map((_, i) => -i)],
    // 2 unknown, 3 control, 6 byte, 1 normal
    ['tokenizer.ggml.token_type', 'i32s', tokens.map((_, i) => (i === 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1))],
    ['tokenizer.ggml.bos_token_id', 'u32', 1],
    ['tokenizer.ggml.eos_token_id', 'u32', 2],
    ['tokenizer.ggml.unknown_token_id', 'u32', 0],
  ];
  const tensors: [string, number[]][] = [
    ['token_embd.weight', [nEmbd, nVocab]],
    ['output_norm.weight', [nEmbd]],
    ['output.weight', [nEmbd, nVocab]],
    ...Array.from({ length: shape.layers }, (_, l): [string, number[]][] => [
      [`blk.${l}.attn_norm.weight`, [nEmbd]],
      [`blk.${l}.attn_q.weight`, [nEmbd, nEmbd]],
      [`blk.${l}.attn_k.weight`, [nEmbd, nEmbd]],
      [`blk.${l}.attn_v.weight`, [nEmbd, nEmbd]],
      [`blk.${l}.attn_output.weight`, [nEmbd, nEmbd]],
      [`blk.${l}.ffn_norm.weight`, [nEmbd]],
      [`blk.${l}.ffn_gate.weight`, [nEmbd, nFf]],
      [`blk.${l}.ffn_up.weight`, [nEmbd, nFf]],
      [`blk.${l}.ffn_down.weight`, [nFf, nEmbd]],
    ]).flat(),
  ];
  const w = new Writer();
  w.push(Buffer.from('GGUF', 'ascii'));
  w.u32(3);
  w.u64(tensors.length);
  w.u64(kvs.length);
  for (const [key, type, value] of kvs) {
    w.str(key);
    if (type === 'u32') {
      w.u32(T.u32);
      w.u32(value as number);
    } else if (type === 'f32') {
      w.u32(T.f32);
      const b = Buffer.alloc(4);
      b.writeFloatLE(value as number);
      w.push(b);
    } else if (type === 'string') {
      w.u32(T.string);
      w.str(value as string);
    } else {
      w.u32(T.array);
      const list = value as (string | number)[];
      w.u32(type === 'strings' ? T.string : type === 'f32s' ? T.f32 : T.i32);
      w.u64(list.length);
      for (const v of list) {
        if (type === 'strings') w.str(v as string);
        else {
          const b = Buffer.alloc(4);
          if (type === 'f32s') b.writeFloatLE(v as number);
          else b.writeInt32LE(v as number);
          w.push(b);
        }
      }
    }
  }
  let offset = 0;
  const sizes = tensors.map(([, dims]) => dims.reduce((a, b) => a * b, 1) * 4);
  tensors.forEach(([name, dims], i) => {
    w.str(name);
    w.u32(dims.length);
    for (const d of dims) w.u64(d);
    w.u32(0); // GGML_TYPE_F32
    w.u64(offset);
    offset += Math.ceil((sizes[i] as number) / 32) * 32;
  });
  w.pad(32);
  const rng = createRng(seed);
  tensors.forEach(([name], i) => {
    const n = (sizes[i] as number) / 4;
    const b = Buffer.alloc(Math.ceil((sizes[i] as number) / 32) * 32);
    // Norm weights at 1, the rest small random values.
    for (let k = 0; k < n; k++) b.writeFloatLE(name.includes('norm') ? 1 : (rng.next() - 0.5) * 0.2, k * 4);
    w.push(b);
  });
  writeFileSync(file, w.bytes());
}
