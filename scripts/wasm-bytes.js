/**
 * The WebAssembly binary format's encodings that the hand-assembled modules share (scripts/draws-wasm.js,
 * scripts/logreg-wasm.js), as https://webassembly.github.io/spec/core/binary/ spells them.
 */

export const uleb = (n) => {
  const out = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
  return out;
};
export const sleb = (n) => {
  const out = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && !(b & 0x40)) || (n === -1 && b & 0x40)) return [...out, b];
    out.push(b | 0x80);
  }
};
export const vec = (items) => [...uleb(items.length), ...items.flat()];
export const name = (s) => vec([...Buffer.from(s)]);
export const section = (id, body) => [id, ...uleb(body.length), ...body];
export const get = (i) => [0x20, ...uleb(i)];
export const set = (i) => [0x21, ...uleb(i)];
export const i32 = (v) => [0x41, ...sleb(v)];
export const [block, loop, end, brIf, br] = [[0x02, 0x40], [0x03, 0x40], [0x0b], [0x0d], [0x0c]];
export const [add, mul, shl, geS] = [[0x6a], [0x6c], [0x74], [0x4e]];
/** `for (counter = start; counter < limit; counter += step) body`, i32 locals; `start` is code that pushes it. */
export const countUp = (counter, start, limit, step, body) => [
  ...start,
  ...set(counter),
  ...block,
  ...loop,
  ...get(counter),
  ...get(limit),
  ...geS,
  ...brIf,
  1,
  ...body,
  ...get(counter),
  ...i32(step),
  ...add,
  ...set(counter),
  ...br,
  0,
  ...end,
  ...end,
];
