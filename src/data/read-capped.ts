import { once } from 'node:events';
import { createWriteStream, truncateSync } from 'node:fs';
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

/** What the answer that began a body said of itself: what a later range of it must say too. */
interface Resumable {
  /** A strong ETag (a weak one does not promise the same bytes), or null. */
  etag: string | null;
  lastModified: string | null;
  /** The whole body's length (Content-Length), where the answer gave it. */
  length: number | undefined;
}

const CONTENT_RANGE = /^bytes (\d+)-(\d+)\/(\d+|\*)$/i;

/**
 * A reply's body saved to a file across the attempts of one request (a batch's results): where the server offers
 * byte ranges (`Accept-Ranges: bytes`) and the body is sent as it is (no `Content-Encoding`), an attempt after one
 * that broke off asks only the rest (`Range: bytes=N-`, `If-Range` with the validator it had) and appends it, when
 * the answer is a 206 whose `Content-Range` starts at that byte and whose validators and length are those of the
 * first answer; any other answer starts the file over. An encoded body (gzip) is never resumed: its range would be of
 * the compressed bytes, and what is kept is the decoded body.
 *
 * The file holds the body with registered secrets replaced (log.ts), never the bytes received: the bytes a secret
 * could still begin with are held back in memory, with the count of bytes taken, so a resumed body is written
 * exactly as an unbroken one would be. That state lives in this object, within one command: a process that ends
 * leaves no resumable part behind (the held-back bytes could be half a key).
 */
export class SavedBody {
  private scrubber = secretScrubber();
  /** Bytes of the body taken from the server so far (all passed to the scrubber). */
  private taken = 0;
  private resumable: Resumable | undefined;
  /** Whether the attempt under way appends to what the file holds. */
  private appending = false;
  /** Attempts that continued the body from where it broke off, and the bytes they did not ask again. */
  resumes = 0;
  bytesKept = 0;

  constructor(readonly file: string) {}

  /** The headers of the next attempt: the rest of the body, where the one before broke off and ranges are offered. */
  rangeHeaders(): Record<string, string> {
    const r = this.resumable;
    if (!r || this.taken === 0) return {};
    const validator = r.etag ?? r.lastModified;
    return { range: `bytes=${this.taken}-`, ...(validator ? { 'if-range': validator } : {}) };
  }

  /** Where the next attempt starts, for a message: from the byte reached, or from the first. */
  get resumeAt(): number {
    return this.resumable ? this.taken : 0;
  }

  /**
   * Takes the answer to an attempt (its status and headers, before its body): true where its body is to be saved
   * (a 206 that continues the body, appended; any other successful answer, from the first byte), false where it
   * is a range this body cannot use (another start, another version, an encoded range, a 416): the caller lets it
   * go and asks for the whole body again.
   */
  accept(status: number, headers: Headers, asked: boolean): boolean {
    if (status === 206 || status === 416) {
      const r = this.resumable;
      const range = CONTENT_RANGE.exec(headers.get('content-range') ?? '');
      const continues =
        status === 206 &&
        asked &&
        r !== undefined &&
        range !== null &&
        Number(range[1]) === this.taken &&
        (r.length === undefined || range[3] === String(r.length)) &&
        (r.etag === null || headers.get('etag') === r.etag) &&
        (r.lastModified === null || headers.get('last-modified') === r.lastModified) &&
        !encoded(headers);
      if (!continues) {
        this.forget();
        return false;
      }
      this.appending = true;
      this.resumes++;
      this.bytesKept += this.taken;
      return true;
    }
    this.forget();
    const etag = headers.get('etag');
    const length = Number(headers.get('content-length') ?? Number.NaN);
    this.resumable =
      status >= 200 &&
      status < 300 &&
      /(^|,)\s*bytes\s*(,|$)/i.test(headers.get('accept-ranges') ?? '') &&
      !encoded(headers)
        ? {
            etag: etag !== null && !etag.startsWith('W/') ? etag : null,
            lastModified: headers.get('last-modified'),
            length: Number.isSafeInteger(length) && length >= 0 ? length : undefined,
          }
        : undefined;
    return true;
  }

  /** Nothing kept: the next attempt asks the whole body, and writes it from the first byte. */
  private forget(): void {
    this.scrubber = secretScrubber();
    this.taken = 0;
    this.resumable = undefined;
    this.appending = false;
  }

  /**
   * Writes the accepted answer's body as it arrives, appending where it continues the body, up to `max` bytes of the
   * whole body (answers whether it fit; a longer one is cut to nothing). A body that breaks off keeps what arrived
   * for the next attempt's range; a file that cannot be written keeps nothing.
   */
  async write(res: Response, max: number): Promise<boolean> {
    const out = createWriteStream(this.file, { flags: this.appending ? 'a' : 'w' });
    const closed = new Promise<void>((resolve, reject) => {
      out.on('close', resolve);
      out.on('error', reject);
    });
    let fits = true;
    let broke: { error: unknown } | undefined;
    try {
      if (res.body) {
        const reader = res.body.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          if (this.taken + value.length > max) {
            fits = false;
            await reader.cancel().catch(() => undefined);
            break;
          }
          this.taken += value.length;
          if (!out.write(this.scrubber.push(value))) await once(out, 'drain');
        }
      }
      if (fits) out.write(this.scrubber.end());
    } catch (e) {
      broke = { error: e };
    }
    out.end();
    try {
      await closed;
    } catch (e) {
      this.forget();
      throw e;
    }
    // Broken off: what arrived stays, for the next attempt's range.
    if (broke) throw broke.error;
    this.forget();
    if (!fits) truncateSync(this.file);
    return fits;
  }
}

/** Whether a body is sent encoded (gzip, br, deflate): its byte ranges are not those of the body saved. */
const encoded = (headers: Headers): boolean => {
  const e = (headers.get('content-encoding') ?? '').trim().toLowerCase();
  return e !== '' && e !== 'identity';
};

/**
 * Writes a reply's body to `file` as it arrives, up to `max` bytes (answers whether it fit; a longer one is cut to
 * nothing). Registered secrets (log.ts) are replaced as the bytes are written: a file a killed run leaves behind holds
 * no key a server echoed. Large answers (a batch's results) pass through a file, never whole through memory.
 */
export async function saveCapped(res: Response, max: number, file: string): Promise<boolean> {
  const saved = new SavedBody(file);
  saved.accept(res.status, res.headers, false);
  return saved.write(res, max);
}

/** The first `max` bytes of a body, as text; the rest let go unread (an error answer's head, for its message). */
export async function readHead(res: Response, max: number): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    bytes += value.length;
    if (bytes >= max) {
      await reader.cancel().catch(() => undefined);
      break;
    }
  }
  return Buffer.concat(chunks).subarray(0, max).toString('utf8');
}
