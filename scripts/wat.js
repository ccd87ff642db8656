/**
 * The WebAssembly kernels' one assembler: a kernel is written in the WebAssembly text format as `src/<room>/NAME.wat`,
 * beside the TypeScript that loads it, and that module imports it as `./NAME.wat.js`, a JavaScript module whose
 * default export is `{ source, bytes }` (src/wasm/kernel.ts). Three paths make that module, all through
 * `watModuleSource` here, so the bytes are the same whoever asks:
 * - `npm run build` (scripts/build.js) writes dist/<room>/NAME.wat.js, which the library and the CLI's bundle load;
 * - vitest (vitest.config.ts) assembles it in memory when a test imports it (`watPlugin`), so tests need no build;
 * - worker threads started from the sources in tests load it through test/source-hooks.js, the same way.
 * The assembler is wabt (https://github.com/WebAssembly/wabt, npm `wabt`, pinned in package.json), run offline from
 * node_modules. It accepts exactly the features of `WAT_FEATURES`: those every Node.js this package supports (20.19
 * on, V8 11.3) runs without a flag.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * What a .wat may use beyond WebAssembly 1.0. On: 128-bit SIMD (`v128`, `f64x2.*`, `i32x4.*`, ...) and the
 * post-1.0 proposals Node.js 20 ships (mutable globals, saturating float-to-int, sign extension, multi-value, bulk
 * memory, reference types). Off: what Node.js 20 does not run by default (relaxed SIMD: its fused multiply-add
 * would also round differently from JavaScript; threads, tail calls, exceptions, GC, memory64, ...). A .wat that
 * uses one of these fails to assemble, naming the instruction.
 */
export const WAT_FEATURES = Object.freeze({
  simd: true,
  mutable_globals: true,
  sat_float_to_int: true,
  sign_extension: true,
  multi_value: true,
  bulk_memory: true,
  reference_types: true,
  relaxed_simd: false,
  threads: false,
  tail_call: false,
  exceptions: false,
  function_references: false,
  gc: false,
  memory64: false,
  extended_const: false,
  annotations: false,
  code_metadata: false,
});

/** wabt, loaded on first use (the test processes that import this module mostly assemble nothing). */
let wabt;

/** The binary module of the text file at `file` (wabt: parsed, names resolved, validated; no name section). */
export async function assembleWat(file) {
  wabt ??= import('wabt').then((m) => m.default());
  const w = await wabt;
  const shown = relative(ROOT, file).split('\\').join('/');
  // wabt's messages name the file (as given here), the line and the column.
  const module = w.parseWat(shown, readFileSync(file, 'utf8'), WAT_FEATURES);
  try {
    module.resolveNames();
    module.validate();
    return Uint8Array.from(module.toBinary({ write_debug_names: false }).buffer);
  } finally {
    module.destroy();
  }
}

/** The text of the JavaScript module `NAME.wat.js` for the kernel at `file`: `export default { source, bytes }`. */
export async function watModuleSource(file) {
  const bytes = await assembleWat(file);
  const source = relative(ROOT, file).split('\\').join('/');
  const base64 = Buffer.from(bytes).toString('base64');
  return [
    `// Assembled from ${source} by scripts/wat.js (wabt): do not edit, edit the .wat.`,
    `export default { source: ${JSON.stringify(source)}, bytes: Uint8Array.from(atob(${JSON.stringify(base64)}), (c) => c.charCodeAt(0)) };`,
    '',
  ].join('\n');
}

/** Every kernel under `dir` (the .wat files; `*.test.wat`, a test's own, aside), as absolute paths. */
export function watFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return watFiles(p);
    return e.name.endsWith('.wat') && !e.name.endsWith('.test.wat') ? [p] : [];
  });
}

/** The .wat file that `NAME.wat.js` is made from, or undefined for any other path. */
export function watOfModule(path) {
  return path.endsWith('.wat.js') ? path.slice(0, -'.js'.length) : undefined;
}

/**
 * The vite plugin that serves `./NAME.wat.js` to vitest from `NAME.wat` beside the importer, assembled in memory (no
 * file written), so that unit tests run from the sources without `npm run build`.
 */
export function watPlugin() {
  const PREFIX = '\0wat:';
  return {
    name: 'rumedbench-wat',
    enforce: 'pre',
    resolveId(source, importer) {
      if (!importer || !source.startsWith('.') || !source.endsWith('.wat.js')) return null;
      return PREFIX + resolve(dirname(importer.split('?')[0]), source);
    },
    async load(id) {
      if (!id.startsWith(PREFIX)) return null;
      const wat = watOfModule(id.slice(PREFIX.length));
      this.addWatchFile?.(wat);
      return watModuleSource(wat);
    },
  };
}
