/**
 * What `import kernel from './NAME.wat.js'` gives a module beside `NAME.wat`: the kernel's assembled bytes and its
 * source file's path. The module is made by scripts/wat.js: by `npm run build` into dist/, by vitest in memory.
 */
declare module '*.wat.js' {
  const kernel: import('./kernel.js').WatModule;
  export default kernel;
}
