/**
 * JSONL reading: one JSON value a line, with the line number kept for messages. Blank lines carry no record and
 * are passed over; everything else is either a value or a parse error, never dropped.
 */
import { readFileSync } from 'node:fs';
import { decodeUtf8, readUtf8LineBatches } from './text.js';

/** A line parsed, or its parse error with the line's first characters (to tell CSV or a JSON array apart). */
export type JsonlLine = { line: number; value: unknown } | { line: number; error: string; start?: string };

/** The deepest nesting a record line may have: task records are two levels deep; 64 leaves room for anything real. */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether JSON text nests arrays and objects deeper than `max`, found by one pass over its characters (strings
 * skipped) before it is parsed: 120,000 `[` parse, but every walk over the value afterwards (printing an issue,
 * validating) recursed until the stack overflowed.
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  // No deeper than it has openers: counted by the engine's own search, a real line (a few lists) is cleared without
  // walking its characters in JavaScript (5 ms of a cold `eval`).
  let openers = 0;
  for (const opener of ['[', '{']) {
    for (let at = text.indexOf(opener); at !== -1; at = text.indexOf(opener, at + 1))
      if (++openers > max) break;
  }
  if (openers <= max) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \\ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 /* [ */ || c === 123 /* { */) {
      if (++depth > max) return true;
    } else if (c === 93 /* ] */ || c === 125 /* } */) depth--;
  }
  return false;
}

/** One line parsed: undefined for a blank line, else its value or why it is not JSON. */
export function parseJsonLine(text: string, line: number): JsonlLine | undefined {
  if (text.trim() === '') return undefined;
  if (nestsDeeperThan(text, MAX_JSON_DEPTH))
    return { line, error: `malformed record: nested deeper than ${MAX_JSON_DEPTH} levels` };
  try {
    return { line, value: JSON.parse(text) as unknown };
  } catch (e) {
    return { line, error: `malformed JSON (${(e as Error).message})`, start: text.trimStart().slice(0, 40) };
  }
}

/** Streams a JSONL file line by line; a file that is not UTF-8 throws a TextEncodingError naming its encoding. */
export async function* readJsonlFile(file: string): AsyncGenerator<JsonlLine> {
  let n = 0;
  for await (const batch of readUtf8LineBatches(file)) {
    for (const text of batch) {
      n += 1;
      const parsed = parseJsonLine(text, n);
      if (parsed) yield parsed;
    }
  }
}

/**
 * A whole JSONL file's lines, for callers that keep them all (a data split, a submission's file): read whole and
 * split at once (the lines are all kept anyway), or streamed where the bytes are not UTF-8, for the stream's message.
 */
export async function readJsonlLines(file: string): Promise<JsonlLine[]> {
  const whole = parseJsonlBytes(file, readFileSync(file));
  if (whole) return whole;
  const out: JsonlLine[] = [];
  let n = 0;
  for await (const batch of readUtf8LineBatches(file)) {
    for (const text of batch) {
      n += 1;
      const parsed = parseJsonLine(text, n);
      if (parsed) out.push(parsed);
    }
  }
  return out;
}

/**
 * A whole JSONL file's lines from its bytes, read as {@link readJsonlLines} reads the file (the same lines, the same
 * numbers); undefined where the bytes are not UTF-8, for the caller to read the file with readJsonlLines, whose
 * message names the encoding as it always has.
 */
export function parseJsonlBytes(file: string, bytes: Uint8Array): JsonlLine[] | undefined {
  let text: string;
  try {
    text = decodeUtf8(bytes, file);
  } catch {
    return undefined;
  }
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const out: JsonlLine[] = [];
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i] as string;
    const parsed = parseJsonLine(l.endsWith('\r') ? l.slice(0, -1) : l, i + 1);
    if (parsed) out.push(parsed);
  }
  return out;
}

/** Parses JSONL already in memory (a zip entry). */
export function* parseJsonl(text: string): Generator<JsonlLine> {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const parsed = parseJsonLine(lines[i] ?? '', i + 1);
    if (parsed) yield parsed;
  }
}

export function toJsonl(records: readonly unknown[]): string {
  return records.map((r) => JSON.stringify(r)).join('\n') + (records.length > 0 ? '\n' : '');
}
