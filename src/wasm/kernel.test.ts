import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { assembleWat, watModuleSource } from '../../scripts/wat.js';
import { REPO_ROOT } from '../../test/helpers/data.js';
import { ensureMemory, WasmKernelError, type WasmMemory, wasmKernel } from './kernel.js';
import testWat from './kernel.test.wat.js';

interface TestExports {
  lanes(x: number, y: number): void;
  memory: WasmMemory;
}

describe('the WebAssembly kernels pipeline', () => {
  it('gives a test the bytes of a .wat without a build, SIMD on, and runs them', async () => {
    expect(testWat.source).toBe('src/wasm/kernel.test.wat');
    expect(testWat.bytes).toEqual(await assembleWat(join(REPO_ROOT, 'src/wasm/kernel.test.wat')));
    const ex = wasmKernel<TestExports>(testWat).instantiate();
    ex.lanes(1.5, 2.25);
    expect([...new Float64Array(ex.memory.buffer, 0, 2)]).toEqual([3.75, 3.75]);
  });

  it('writes the module the build and the tests load from one function', async () => {
    const text = await watModuleSource(join(REPO_ROOT, 'src/wasm/kernel.test.wat'));
    expect(text).toMatch(/^\/\/ Assembled from src\/wasm\/kernel\.test\.wat by scripts\/wat\.js/);
    const url = `data:text/javascript;base64,${Buffer.from(text).toString('base64')}`;
    const loaded = (await import(/* @vite-ignore */ url)) as { default: typeof testWat };
    expect(loaded.default).toEqual(testWat);
  });

  it('refuses a .wat that uses what Node.js 20 does not run (relaxed SIMD), naming its file and line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wat-'));
    try {
      const file = join(dir, 'relaxed.wat');
      writeFileSync(
        file,
        '(module\n  (func (param v128) (result v128)\n    (f32x4.relaxed_madd (local.get 0) (local.get 0) (local.get 0))))\n',
      );
      await expect(assembleWat(file)).rejects.toThrow(
        /relaxed\.wat:3:\d+: error: opcode not allowed: f32x4\.relaxed_madd/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('throws WASM_KERNEL naming the .wat when the engine refuses the bytes, and no fallback', () => {
    const broken = wasmKernel({
      source: 'src/ml/broken.wat',
      bytes: Uint8Array.of(0, 0x61, 0x73, 0x6d, 9, 0, 0, 0),
    });
    let caught: unknown;
    try {
      broken.instantiate();
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(WasmKernelError);
    expect((caught as WasmKernelError).code).toBe('WASM_KERNEL');
    expect((caught as WasmKernelError).message).toMatch(/^src\/ml\/broken\.wat: this Node\.js v\d+/);
  });

  it('gives each instance its own memory, grown to what is asked', () => {
    const kernel = wasmKernel<TestExports>(testWat);
    const [a, b] = [kernel.instantiate(), kernel.instantiate()];
    ensureMemory(a.memory, 65536 * 3 + 1);
    expect([a.memory.buffer.byteLength, b.memory.buffer.byteLength]).toEqual([65536 * 4, 65536]);
    ensureMemory(a.memory, 100);
    expect(a.memory.buffer.byteLength).toBe(65536 * 4);
  });
});
