/** The one text reader (#18): strict UTF-8, a BOM and CRLF accepted, and a file in another encoding named once. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readSubmission } from '../scoring/submission.js';
import { decodeUtf8, readUtf8LineBatches, readUtf8Lines, sniffEncoding, TextEncodingError } from './text.js';

/** Windows-1251 bytes of a text of ASCII and Cyrillic (what Excel or Notepad on a Russian Windows saves). */
function cp1251(text: string): Buffer {
  return Buffer.from(
    [...text].map((ch) => {
      const c = ch.codePointAt(0) as number;
      if (c < 0x80) return c;
      if (c >= 0x410 && c <= 0x44f) return 0xc0 + (c - 0x410);
      if (ch === 'Ё') return 0xa8;
      if (ch === 'ё') return 0xb8;
      throw new Error(`no cp1251 byte for ${ch}`);
    }),
  );
}

const tmp = () => mkdtempSync(join(tmpdir(), 'rumedbench-text-'));

/** A RuMedDaNet predictions file: long hex ids, and answers of two Cyrillic letters or three. */
const danet = Array.from(
  { length: 256 },
  (_, i) =>
    `{"pairID": "${(i * 2654435761).toString(16).padStart(32, 'a')}", "answer": "${i % 2 ? 'да' : 'нет'}", "prediction": "да"}`,
).join('\n');

describe('reading text', () => {
  it('names Windows-1251 by the non-ASCII bytes, even when hex ids outweigh the Cyrillic letters', () => {
    const bytes = cp1251(danet);
    expect(sniffEncoding(bytes)).toBe('Windows-1251 (cp1251)');
    expect(() => decodeUtf8(bytes, 'RuMedDaNet.jsonl')).toThrow(
      'RuMedDaNet.jsonl: the file is not UTF-8: it looks like Windows-1251 (cp1251); save it as UTF-8 (iconv -f cp1251 -t utf-8)',
    );
    expect(sniffEncoding(Buffer.from(danet, 'utf16le'))).toBe('UTF-16');
    expect(sniffEncoding(Buffer.from([0x41, 0xff, 0x41, 0x80]))).toBe('invalid UTF-8 bytes');
    expect(decodeUtf8(Buffer.from('\uFEFF{"a": "б"}', 'utf8'), 'x')).toBe('{"a": "б"}');
  });

  it('gives `eval` one BAD_ENCODING error for the file, not one unknown label per line', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'RuMedDaNet.jsonl'), cp1251(danet));
    const s = await readSubmission(dir);
    expect([s.files, s.issues]).toEqual([
      [],
      [
        {
          severity: 'error',
          code: 'BAD_ENCODING',
          file: join(dir, 'RuMedDaNet.jsonl'),
          message:
            'the file is not UTF-8: it looks like Windows-1251 (cp1251); save it as UTF-8 (iconv -f cp1251 -t utf-8)',
          expected: 'UTF-8',
          found: 'Windows-1251 (cp1251)',
        },
      ],
    ]);
    const utf16 = tmp();
    writeFileSync(
      join(utf16, 'RuMedDaNet.jsonl'),
      Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(danet, 'utf16le')]),
    );
    expect((await readSubmission(utf16)).issues.map((i) => [i.code, i.found])).toEqual([
      ['BAD_ENCODING', 'UTF-16'],
    ]);
  });

  it('streams lines of any length, a letter split between chunks, a BOM and CRLF line ends', async () => {
    const file = join(tmp(), 'big.jsonl');
    // 1 MiB chunks: an odd number of ASCII bytes first, so that a two-byte letter straddles each boundary.
    const long = `x${'я'.repeat(700_000)}`;
    writeFileSync(file, `\uFEFF${long}\r\nвторая\r\n\nтретья`);
    const lines: string[] = [];
    for await (const l of readUtf8Lines(file)) lines.push(l);
    expect(lines).toEqual([long, 'вторая', '', 'третья']);
    const bad = join(tmp(), 'bad.jsonl');
    writeFileSync(bad, Buffer.concat([Buffer.from('ok\n'), cp1251('нет да нет')]));
    await expect(async () => {
      for await (const _ of readUtf8Lines(bad));
    }).rejects.toThrow(TextEncodingError);
  });
});

describe('lines longer than a limit', () => {
  it('are passed over, whether within one chunk or across many, and the lines around them kept', async () => {
    const file = join(tmp(), 'results.jsonl');
    // 3 MiB without a newline spans several 1 MiB chunks; the 20-character line fits a chunk but not the limit.
    writeFileSync(
      file,
      `short 1\n${'x'.repeat(3 << 20)}\nshort 2\n${'y'.repeat(20)}\nshort 3\n${'z'.repeat(2 << 20)}`,
    );
    const lines: string[] = [];
    for await (const batch of readUtf8LineBatches(file, { skipLongerThan: 10 })) lines.push(...batch);
    expect(lines).toEqual(['short 1', 'short 2', 'short 3']);
  });
});
