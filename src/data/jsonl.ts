/**
 * JSONL reading: one JSON value a line, with the line number kept for messages. Blank lines carry no record and
 * are passed over; everything else is either a value or a parse error, never dropped.
 */
import { readUtf8Lines } from './text.js';

export type JsonlLine = { line: number; value: unknown } | { line: number; error: string };

function parseLine(text: string, line: number): JsonlLine | undefined {
  if (text.trim() === '') return undefined;
  try {
    return { line, value: JSON.parse(text) as unknown };
  } catch (e) {
    return { line, error: `malformed JSON (${(e as Error).message})` };
  }
}

/** Streams a JSONL file line by line; a file that is not UTF-8 throws a TextEncodingError naming its encoding. */
export async function* readJsonlFile(file: string): AsyncGenerator<JsonlLine> {
  let n = 0;
  for await (const text of readUtf8Lines(file)) {
    n += 1;
    const parsed = parseLine(text, n);
    if (parsed) yield parsed;
  }
}

/** Parses JSONL already in memory (a zip entry). */
export function* parseJsonl(text: string): Generator<JsonlLine> {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const parsed = parseLine(lines[i] ?? '', i + 1);
    if (parsed) yield parsed;
  }
}

export function toJsonl(records: readonly unknown[]): string {
  return records.map((r) => JSON.stringify(r)).join('\n') + (records.length > 0 ? '\n' : '');
}
