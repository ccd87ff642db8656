/** Bodies read under a cap, whatever their Content-Length says (a chunked body has none). */
import { describe, expect, it } from 'vitest';
import { readCapped } from './read-capped.js';

const chunked = (parts: string[]) => {
  let pulled = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      const p = parts[pulled++];
      if (p === undefined) c.close();
      else c.enqueue(new TextEncoder().encode(p));
    },
  });
  return { res: new Response(stream), pulled: () => pulled };
};

describe('readCapped', () => {
  it('reads a body within the cap, and stops at the first chunk past it', async () => {
    expect(await readCapped(chunked(['Ответ: ', 'да']).res, 100)).toBe('Ответ: да');
    const big = chunked(['x'.repeat(60), 'x'.repeat(60), 'x'.repeat(60), 'x'.repeat(60)]);
    expect(await readCapped(big.res, 100)).toBeNull();
    expect(big.pulled()).toBeLessThanOrEqual(3);
  });
});
