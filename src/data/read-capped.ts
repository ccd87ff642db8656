import { once } from 'node:events';
import { createWriteStream, truncateSync } from 'node:fs';

/** A response body read to at most `max` bytes, counted as it arrives: null (the stream cancelled) when it is longer. */
export async function readCapped(res: Response, max: number): Promise<string | null> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.length;
    if (bytes > max) {
      await reader.cancel().catch(() => undefined);
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * A response body written to `file` as it arrives, to at most `max` bytes: false (the stream cancelled, the file
 * emptied) when it is longer. Large answers (a batch's results) pass through a file, never whole through memory.
 */
export async function saveCapped(res: Response, max: number, file: string): Promise<boolean> {
  const out = createWriteStream(file);
  const closed = new Promise<void>((resolve, reject) => {
    out.on('close', resolve);
    out.on('error', reject);
  });
  let bytes = 0;
  let fits = true;
  try {
    if (res.body) {
      const reader = res.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        bytes += value.length;
        if (bytes > max) {
          fits = false;
          await reader.cancel().catch(() => undefined);
          break;
        }
        if (!out.write(value)) await once(out, 'drain');
      }
    }
  } finally {
    out.end();
    await closed;
  }
  if (!fits) truncateSync(file);
  return fits;
}
