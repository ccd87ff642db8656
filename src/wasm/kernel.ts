/**
 * The one loader of the WebAssembly kernels. A kernel is written in the WebAssembly text format, `NAME.wat` beside
 * the module that uses it, and that module imports its bytes as `./NAME.wat.js` (scripts/wat.js assembles it with
 * wabt: `npm run build` into dist/, vitest in memory) and hands them to {@link wasmKernel}:
 *
 *     import logregWat from './logreg.wat.js';
 *     const logreg = wasmKernel<LogregExports>(logregWat);
 *     const ex = logreg.instantiate(); // synchronous: compiled once, on first use
 *
 * Loading stays synchronous (callers need no `await`): the bytes are a static import and Node.js compiles a module
 * of any size synchronously. A Node.js that cannot compile a kernel (one run with SIMD switched off) gets a
 * {@link WasmKernelError} naming the .wat, never a slower JavaScript path in its place.
 */
import { RumedbenchError } from '../errors.js';

/** The default export of a `NAME.wat.js` module. */
export interface WatModule {
  /** The .wat it was assembled from, relative to the package root (`src/ml/logreg.wat`). */
  readonly source: string;
  readonly bytes: Uint8Array;
}

/** A kernel's exported memory (WebAssembly.Memory, as far as the kernels use it). */
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}

/** A kernel's exported mutable global (WebAssembly.Global). */
export interface WasmGlobal<T = number> {
  value: T;
}

/** A compiled kernel: each {@link WasmKernel.instantiate} is a fresh instance, with its own memory and globals. */
export interface WasmKernel<Exports> {
  readonly source: string;
  instantiate(): Exports;
}

/** A kernel this Node.js cannot compile or instantiate (code `WASM_KERNEL`), its .wat named. */
export class WasmKernelError extends RumedbenchError {
  readonly source: string;
  constructor(source: string, cause: unknown) {
    const why = cause instanceof Error ? cause.message : String(cause);
    super(
      'WASM_KERNEL',
      `${source}: this Node.js ${process.version} cannot run the WebAssembly kernel (${why}); it needs 128-bit SIMD, on by default since Node.js 16`,
      { cause },
    );
    this.name = 'WasmKernelError';
    this.source = source;
  }
}

// The project's types are Node's, without the DOM's WebAssembly: what the loader uses of it, declared once here.
const { WebAssembly: wasm } = globalThis as unknown as {
  WebAssembly: {
    Module: new (bytes: Uint8Array) => object;
    Instance: new (module: object, imports?: object) => { exports: unknown };
  };
};

/** The kernel of `wat`, compiled on its first instance (synchronously) and once only. */
export function wasmKernel<Exports>(wat: WatModule): WasmKernel<Exports> {
  let compiled: object | undefined;
  return {
    source: wat.source,
    instantiate(): Exports {
      try {
        compiled ??= new wasm.Module(wat.bytes);
        return new wasm.Instance(compiled).exports as Exports;
      } catch (e) {
        throw new WasmKernelError(wat.source, e);
      }
    },
  };
}

/** Grows `memory` (64 KiB pages) until it holds at least `bytes`; its views made before a growth are detached. */
export function ensureMemory(memory: WasmMemory, bytes: number): void {
  const have = memory.buffer.byteLength;
  if (bytes > have) memory.grow(Math.ceil((bytes - have) / 65536));
}
