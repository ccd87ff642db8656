/**
 * Node.js module hooks that run the TypeScript sources as they are, for what vitest's own module runner does not
 * reach: the worker threads a test starts from src/ (the scorer's pool, the one-vs-rest trainer, the tokenizer).
 * Registered by test/source-register.js, which vitest.config.ts passes to every test process (`execArgv`); a worker
 * thread inherits it and registers them for itself. Three things, as vitest does them:
 * - a relative `./x.js` imported by a .ts module, where only `./x.ts` (or .tsx) exists, is that file;
 * - .ts and .tsx are stripped of their types by oxc (rolldown's transform; JSX as tsconfig.json sets it, hono/jsx);
 * - `./NAME.wat.js` is the WebAssembly kernel NAME.wat assembled (scripts/wat.js, as the build and vitest do).
 * Anything else (node_modules, dist/) loads untouched.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { watModuleSource, watOfModule } from '../scripts/wat.js';

// Loaded when first needed: most test processes start no worker thread, and do not pay for it.
const oxc = () => import('rolldown/experimental');

const TS = /\.tsx?$/;

export async function resolve(specifier, context, next) {
  const parent = context.parentURL;
  if (
    parent?.startsWith('file:') &&
    TS.test(parent) &&
    specifier.startsWith('.') &&
    specifier.endsWith('.js')
  ) {
    const url = new URL(specifier, parent);
    const path = fileURLToPath(url);
    if (watOfModule(path) && existsSync(watOfModule(path)))
      return { url: url.href, format: 'module', shortCircuit: true };
    if (!existsSync(path))
      for (const ext of ['.ts', '.tsx']) {
        const source = path.replace(/\.js$/, ext);
        if (existsSync(source))
          return { url: pathToFileURL(source).href, format: 'module', shortCircuit: true };
      }
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (!url.startsWith('file:')) return next(url, context);
  const path = fileURLToPath(url);
  const wat = watOfModule(path);
  if (wat && !existsSync(path))
    return { format: 'module', source: await watModuleSource(wat), shortCircuit: true };
  if (!TS.test(path)) return next(url, context);
  const out = await (await oxc()).transform(path, readFileSync(path, 'utf8'), {
    jsx: { runtime: 'automatic', importSource: 'hono/jsx' },
    sourcemap: true,
  });
  if (out.errors.length > 0) throw out.errors[0];
  const map = out.map
    ? `\n//# sourceMappingURL=data:application/json;base64,${Buffer.from(JSON.stringify(out.map)).toString('base64')}`
    : '';
  return { format: 'module', source: out.code + map, shortCircuit: true };
}
