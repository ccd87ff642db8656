/**
 * Strict UTF-8 for every user file (a byte-order mark accepted), never a silent replacement character: a file that
 * is not UTF-8 is refused once, naming what it looks like: UTF-16 (a byte-order mark, or NUL bytes between ASCII
 * ones), Windows-1251 (the non-ASCII bytes are Cyrillic letters in that code page), or else bytes that are not UTF-8.
 * At the floor of src/ so that the task definitions (src/tasks) read their files the way data files are read;
 * src/data/text.ts adds the streaming readers and is where the rest of the code takes these from.
 */
import { readFileSync } from 'node:fs';
import { RumedbenchError } from './errors.js';

export type Encoding = 'UTF-16' | 'Windows-1251 (cp1251)' | 'invalid UTF-8 bytes';

export class TextEncodingError extends RumedbenchError {
  constructor(
    readonly file: string,
    readonly found: Encoding,
  ) {
    super('BAD_ENCODING', `${file}: ${encodingMessage(found)}`);
    this.name = 'TextEncodingError';
  }
}

/** What to tell the user about a file in the encoding found. */
export function encodingMessage(found: Encoding): string {
  if (found === 'UTF-16') return 'the file is UTF-16; save it as UTF-8';
  if (found === 'Windows-1251 (cp1251)')
    return 'the file is not UTF-8: it looks like Windows-1251 (cp1251); save it as UTF-8 (iconv -f cp1251 -t utf-8)';
  return 'the file is not valid UTF-8';
}

/** Cyrillic letters in Windows-1251: А–я at 0xC0–0xFF, Ё and ё at 0xA8 and 0xB8. */
const isCp1251Letter = (b: number): boolean => b >= 0xc0 || b === 0xa8 || b === 0xb8;

/** What bytes that failed strict UTF-8 decoding look like. Judged by the non-ASCII bytes alone, not by the ids. */
export function sniffEncoding(bytes: Uint8Array): Encoding {
  if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff)) return 'UTF-16';
  const sample = bytes.subarray(0, 1 << 16);
  let nul = 0;
  let high = 0;
  let letters = 0;
  for (const b of sample) {
    if (b === 0) nul++;
    else if (b >= 0x80) {
      high++;
      if (isCp1251Letter(b)) letters++;
    }
  }
  if (nul > 0 && nul >= sample.length / 4) return 'UTF-16';
  return letters >= 2 && letters >= 0.8 * high ? 'Windows-1251 (cp1251)' : 'invalid UTF-8 bytes';
}

export const stripBom = (text: string): string => (text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);

/** Bytes as UTF-8 text, strictly; throws a TextEncodingError naming `file` otherwise. */
export function decodeUtf8(bytes: Uint8Array, file: string): string {
  if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff))
    throw new TextEncodingError(file, 'UTF-16');
  try {
    return stripBom(new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes));
  } catch {
    throw new TextEncodingError(file, sniffEncoding(bytes));
  }
}

/** A whole file as UTF-8 text (small files: JSON, templates). */
export const readUtf8File = (file: string): string => decodeUtf8(readFileSync(file), file);
