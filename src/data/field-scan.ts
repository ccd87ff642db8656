/**
 * One field's string values across a JSONL file, read from the bytes. Scoring a ranking task needs the labels its
 * train file uses (RuMedTop3's 1.7 MB, RuMedSymptomRec's 1 MB), and decoding and parsing every line for one short
 * field was a sixth of an `eval` of the five public sets (issue #25). A line is read by the scan only where the
 * scan is sure to agree with `JSON.parse`: one object (a single `{` on the line), the field's key found once, in
 * key position, followed by a plain string and then `,` or `}`. Any other line (nested objects, the key written
 * with escapes or twice, a value that is not a string) is parsed whole, as before.
 */

import { isUtf8 } from 'node:buffer';
import { readFileSync } from 'node:fs';
import { parseJsonLine } from './jsonl.js';
import { sniffEncoding, TextEncodingError } from './text.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN = 0x7b;
const CLOSE = 0x7d;
const COMMA = 0x2c;
const COLON = 0x3a;
const NEWLINE = 0x0a;
const isSpace = (b: number | undefined): boolean => b === 0x20 || b === 0x09 || b === 0x0d || b === 0x0a;

/** Counts `byte` in `line` up to two (all the scan needs to know). */
function countUpToTwo(line: Uint8Array, byte: number): number {
  const first = line.indexOf(byte);
  if (first < 0) return 0;
  return line.indexOf(byte, first + 1) < 0 ? 1 : 2;
}

/** The line's value of the key, or `undefined` where the scan cannot be sure and the line must be parsed. */
function scanLine(line: Buffer, key: Buffer): { value: string } | undefined {
  if (countUpToTwo(line, OPEN) !== 1) return undefined;
  const at = line.indexOf(key);
  if (at < 0 || line.indexOf(key, at + 1) >= 0) return undefined;
  let i = at - 1;
  while (isSpace(line[i])) i--;
  if (line[i] !== OPEN && line[i] !== COMMA) return undefined;
  i = at + key.length;
  while (isSpace(line[i])) i++;
  if (line[i] !== COLON) return undefined;
  i++;
  while (isSpace(line[i])) i++;
  if (line[i] !== QUOTE) return undefined;
  const start = i;
  for (i++; i < line.length; i++) {
    const b = line[i];
    if (b === BACKSLASH) i++;
    else if (b === QUOTE) break;
  }
  if (i >= line.length) return undefined;
  const end = i + 1;
  for (i = end; isSpace(line[i]); i++);
  if (line[i] !== COMMA && line[i] !== CLOSE) return undefined;
  try {
    const value: unknown = JSON.parse(line.toString('utf8', start, end));
    return typeof value === 'string' ? { value } : undefined;
  } catch {
    return undefined;
  }
}

/** The string values of a top-level field over a JSONL file's lines; lines that are not JSON objects add none. */
export async function readFieldStrings(file: string, field: string): Promise<Set<string>> {
  return fieldStringsOf(file, readFileSync(file), field);
}

/** {@link readFieldStrings} of a file's bytes already read (`file` names it in messages). */
export function fieldStringsOf(file: string, whole: Buffer, field: string): Set<string> {
  const key = Buffer.from(JSON.stringify(field), 'utf8');
  const values = new Set<string>();
  const readLine = (line: Buffer): void => {
    const scanned = scanLine(line, key);
    if (scanned) {
      values.add(scanned.value);
      return;
    }
    const text = line.toString('utf8');
    if (text.trim() === '') return;
    const parsed = parseJsonLine(text, 0);
    const value =
      parsed && 'value' in parsed ? (parsed.value as Record<string, unknown> | null)?.[field] : undefined;
    if (typeof value === 'string') values.add(value);
  };
  // Whole: the file is read once and kept only as bytes (the line parser this replaced kept every line's value).
  let bytes = whole;
  if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff))
    throw new TextEncodingError(file, 'UTF-16');
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3);
  if (!isUtf8(bytes)) throw new TextEncodingError(file, sniffEncoding(bytes));
  for (let s = 0; s < bytes.length; ) {
    let e = bytes.indexOf(NEWLINE, s);
    if (e < 0) e = bytes.length;
    readLine(bytes.subarray(s, e));
    s = e + 1;
  }
  return values;
}
