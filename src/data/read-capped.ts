import { once } from 'node:events';
import { createWriteStream, truncateSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { secretPattern, secretSpan } from '../log.js';

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

/** A Node.js stream read to at most `max` bytes, counted as it arrives: null (the stream destroyed) when it is longer. */
export async function readStreamCapped(body: Readable, max: number): Promise<string | null> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of body) {
    const b = chunk as Buffer;
    bytes += b.length;
    if (bytes > max) {
      // A body let go unread errs (undici's): nobody reads it.
      body.on('error', () => {});
      body.destroy();
      return null;
    }
    chunks.push(b);
  }
  return chunks.length === 1
    ? (chunks[0] as Buffer).toString('utf8')
    : Buffer.concat(chunks).toString('utf8');
}

/**
 * A response body written to `file` as it arrives, to at most `max` bytes: false (the stream cancelled, the file
 * emptied) when it is longer. Large answers (a batch's results) pass through a file, never whole through memory.
 */
/**
 * Replaces each secret, in each form it travels in (log.ts, secretPattern), in a stream of chunks before it is
 * written: a secret split across two chunks is caught by holding back, from each chunk, the bytes a secret's form may
 * span. Bytes are matched as latin1 strings, which map each byte to one character, so any encoding passes through
 * unchanged.
 */
function secretScrubber(): { push(b: Uint8Array): Buffer; end(): Buffer } {
  const pattern = secretPattern(true);
  const hold = Math.max(0, secretSpan() - 1);
  let carry = '';
  const scrub = (text: string) => (pattern ? text.replace(pattern, '***') : text);
  return {
    push(b) {
      if (!pattern) return Buffer.from(b);
      const text = scrub(carry + Buffer.from(b).toString('latin1'));
      carry = text.slice(Math.max(0, text.length - hold));
      return Buffer.from(text.slice(0, text.length - carry.length), 'latin1');
    },
    end() {
      const rest = Buffer.from(scrub(carry), 'latin1');
      carry = '';
      return rest;
    },
  };
}

/**
 * Writes a reply's body to `file` as it arrives, up to `max` bytes (answers whether it fit; a longer one is cut to
 * nothing). Registered secrets (log.ts) are replaced as the bytes are written: a file a killed run leaves behind holds
 * no key a server echoed.
 */
export async function saveCapped(res: Response, max: number, file: string): Promise<boolean> {
  const scrubber = secretScrubber();
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
        if (!out.write(scrubber.push(value))) await once(out, 'drain');
      }
      if (fits) out.write(scrubber.end());
    }
  } finally {
    out.end();
    await closed;
  }
  if (!fits) truncateSync(file);
  return fits;
}
