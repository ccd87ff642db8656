/**
 * The one way the project reads text: strict UTF-8 (a byte-order mark accepted), never a silent replacement
 * character. A file that is not UTF-8 is refused once, naming what it looks like: UTF-16 (a byte-order mark, or NUL
 * bytes between ASCII ones), Windows-1251 (the non-ASCII bytes are Cyrillic letters in that code page), or else
 * bytes that are not UTF-8. Every reader of user files goes through here: eval, compare, report, predict --input,
 * uploads, import-gold, templates; task definitions read theirs through the same core, ../utf8.ts, which this
 * module re-exports (src/tasks sits below src/data and cannot import it).
 */
import { createReadStream } from 'node:fs';
import { sniffEncoding, stripBom, TextEncodingError } from '../utf8.js';

export {
  decodeUtf8,
  encodingMessage,
  readUtf8File,
  sniffEncoding,
  TextEncodingError,
} from '../utf8.js';

/** The lines of a file, decoded strictly as they stream (`\n` or `\r\n` ends a line); throws once on bad bytes. */
export async function* readUtf8Lines(file: string): AsyncGenerator<string> {
  for await (const batch of readUtf8LineBatches(file)) yield* batch;
}

/**
 * The same lines, a chunk's worth (1 MiB) at a time: one await per chunk instead of one per line, which is most of
 * the time of reading a data file line by line.
 */
export async function* readUtf8LineBatches(
  file: string,
  /** skipLongerThan: lines longer than this many characters are passed over, never held whole (hostile files). */
  options: { skipLongerThan?: number } = {},
): AsyncGenerator<string[]> {
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  const limit = options.skipLongerThan ?? Number.POSITIVE_INFINITY;
  let rest = '';
  let first = true;
  /** In the middle of a line already too long: what comes before the next newline is passed over. */
  let skipping = false;
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    if (first && ((chunk[0] === 0xff && chunk[1] === 0xfe) || (chunk[0] === 0xfe && chunk[1] === 0xff)))
      throw new TextEncodingError(file, 'UTF-16');
    let text: string;
    try {
      text = decoder.decode(chunk, { stream: true });
    } catch {
      throw new TextEncodingError(file, sniffEncoding(chunk));
    }
    if (first) {
      text = stripBom(text);
      first = false;
    }
    let lines = (rest + text).split('\n');
    rest = lines.pop() ?? '';
    if (skipping && lines.length > 0) {
      lines.shift();
      skipping = false;
    }
    if (rest.length > limit) {
      skipping = true;
      rest = '';
    }
    if (limit !== Number.POSITIVE_INFINITY) lines = lines.filter((l) => l.length <= limit);
    for (let i = 0; i < lines.length; i++) {
      const l = lines[i] as string;
      if (l.endsWith('\r')) lines[i] = l.slice(0, -1);
    }
    yield lines;
  }
  try {
    rest += decoder.decode();
  } catch {
    throw new TextEncodingError(file, 'invalid UTF-8 bytes');
  }
  if (rest !== '' && !skipping && rest.length <= limit)
    yield [rest.endsWith('\r') ? rest.slice(0, -1) : rest];
}
