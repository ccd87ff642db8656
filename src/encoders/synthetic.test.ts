import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tinyBert } from '../../test/helpers/tiny-bert.js';

describe('the generated BERT', () => {
  it('is the same bytes for the same options, and other bytes for another seed', () => {
    const files = [
      'config.json',
      'tokenizer.json',
      'tokenizer_config.json',
      'onnx/model.onnx',
      'onnx/model_quantized.onnx',
    ];
    const a = tinyBert({ quantized: true });
    const b = tinyBert({ quantized: true });
    const c = tinyBert({ quantized: true, seed: 7 });
    for (const f of files) expect(readFileSync(join(a, f)).equals(readFileSync(join(b, f)))).toBe(true);
    expect(readFileSync(join(a, 'onnx/model.onnx')).equals(readFileSync(join(c, 'onnx/model.onnx')))).toBe(
      false,
    );
    // Small enough to make in every test that needs one.
    expect(readFileSync(join(a, 'onnx/model.onnx')).length).toBeLessThan(200_000);
  });
});
