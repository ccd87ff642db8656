import { describe, expect, it } from 'vitest';
import { makeZip } from '../../test/helpers/zip.js';
import { DEFAULT_LIMITS, readUpload, type UploadLimits } from './upload.js';

const line = '{"pairID": "a1", "answer": "да"}';
const zipFile = (entries: Parameters<typeof makeZip>[0], name = 'sub.zip') => ({
  name,
  data: makeZip(entries),
});
const codes = async (files: Parameters<typeof readUpload>[0], limits: UploadLimits = DEFAULT_LIMITS) =>
  (await readUpload(files, limits)).issues.map((i) => [i.code, i.file, i.message]);

describe('reading uploads', () => {
  it('reads a zip and plain files, with a BOM and CRLF line ends', async () => {
    const r = await readUpload([
      zipFile([{ name: 'run/RuMedDaNet.jsonl', data: `\uFEFF${line}\r\n${line}\r\n` }]),
      { name: 'RuMedNLI.jsonl', data: new TextEncoder().encode('{"pairID":"b"}\n') },
    ]);
    expect(r.issues).toEqual([]);
    expect(r.entries.map((e) => [e.name, e.text()])).toEqual([
      // The decoder drops the BOM; the CRLFs stay for the JSONL reader.
      ['run/RuMedDaNet.jsonl', `${line}\r\n${line}\r\n`],
      ['RuMedNLI.jsonl', '{"pairID":"b"}\n'],
    ]);
  });

  it.each([
    ['../RuMedDaNet.jsonl', 'BAD_FILE_NAME'],
    ['a/../../etc/passwd', 'BAD_FILE_NAME'],
    ['/etc/RuMedDaNet.jsonl', 'BAD_FILE_NAME'],
    ['C:/RuMedDaNet.jsonl', 'BAD_FILE_NAME'],
    ['run\\RuMedDaNet.jsonl', 'BAD_FILE_NAME'],
    ['Ru\0MedDaNet.jsonl', 'BAD_FILE_NAME'],
    ['inner.zip', 'NESTED_ARCHIVE'],
    ['inner.tar.gz', 'NESTED_ARCHIVE'],
  ])('refuses the entry name %j', async (name, code) => {
    const r = await readUpload([zipFile([{ name, data: line }])]);
    expect(r.entries).toEqual([]);
    expect(r.issues.map((i) => i.code)).toEqual([code]);
    expect(r.issues[0]?.file.startsWith('sub.zip')).toBe(true);
  });

  it('refuses repeated names (letter case aside) and uploaded file names that climb out', async () => {
    expect(
      await codes([
        zipFile([
          { name: 'RuMedDaNet.jsonl', data: line },
          { name: 'rumeddanet.JSONL', data: line },
        ]),
      ]),
    ).toEqual([['DUPLICATE_FILE', 'sub.zip!rumeddanet.JSONL', 'the zip holds this name twice']]);
    expect(await codes([{ name: '../RuMedDaNet.jsonl', data: new Uint8Array([1]) }])).toEqual([
      ['BAD_FILE_NAME', '"../RuMedDaNet.jsonl"', 'the file name climbs out of the archive (..)'],
    ]);
  });

  it('caps the entry count before reading any entry', async () => {
    const entries = Array.from({ length: 17 }, (_, i) => ({ name: `f${i}.jsonl`, data: line }));
    expect(await codes([zipFile(entries)])).toEqual([
      ['TOO_MANY_FILES', 'sub.zip', 'the zip holds 17 entries'],
    ]);
  });

  it('refuses a zip whose header lies about an entry’s size, once the lie shows', async () => {
    // 40 MiB of zeros deflate to about 40 KB; the headers claim 100 bytes.
    const bomb = zipFile([{ name: 'RuMedDaNet.jsonl', data: new Uint8Array(40 << 20), declaredSize: 100 }]);
    expect(bomb.data.length).toBeLessThan(100_000);
    expect(await codes([bomb])).toEqual([
      [
        'ZIP_BOMB',
        'sub.zip!RuMedDaNet.jsonl',
        'the entry inflates beyond the size its header declares; refused',
      ],
    ]);
  });

  it('counts bytes while inflating: an entry over the size cap stops at the cap', async () => {
    const big = zipFile([{ name: 'RuMedDaNet.jsonl', data: new Uint8Array(40 << 20) }]);
    const t0 = performance.now();
    expect(await codes([big], { ...DEFAULT_LIMITS, maxRatio: 1e9 })).toEqual([
      ['UPLOAD_TOO_LARGE', 'sub.zip!RuMedDaNet.jsonl', 'larger than 16 MiB once inflated'],
    ]);
    expect(performance.now() - t0).toBeLessThan(5000);
  });

  it('refuses an entry that inflates far beyond its compressed size', async () => {
    const r = await readUpload([zipFile([{ name: 'RuMedDaNet.jsonl', data: new Uint8Array(4 << 20) }])]);
    expect(r.issues.map((i) => [i.code, i.message])).toEqual([
      ['ZIP_BOMB', 'inflates more than 200 times its compressed size; refused'],
    ]);
  });

  it('caps the total of all files', async () => {
    const big = 'x'.repeat(3 << 20);
    const limits = { ...DEFAULT_LIMITS, maxTotalBytes: 5 << 20, maxRatio: 1e9, maxLineBytes: 4 << 20 };
    const r = await readUpload(
      [
        zipFile([
          { name: 'a.jsonl', data: big },
          { name: 'b.jsonl', data: big },
        ]),
      ],
      limits,
    );
    expect(r.issues.map((i) => [i.code, i.file])).toEqual([['UPLOAD_TOO_LARGE', 'sub.zip!b.jsonl']]);
  });

  it('names the encoding of a file that is not UTF-8', async () => {
    const cp1251 = Buffer.from([0x7b, 0x22, 0xe4, 0xe0, 0x22, 0x7d, 0x20, 0xed, 0xe5, 0xf2, 0x0a]); // {"да"} нет
    expect(await codes([{ name: 'RuMedDaNet.jsonl', data: cp1251 }])).toEqual([
      [
        'BAD_ENCODING',
        'RuMedDaNet.jsonl',
        'the file is not UTF-8: it looks like Windows-1251 (cp1251); save it as UTF-8 (iconv -f cp1251 -t utf-8)',
      ],
    ]);
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(line, 'utf16le')]);
    expect(await codes([{ name: 'RuMedDaNet.jsonl', data: utf16 }])).toEqual([
      ['BAD_ENCODING', 'RuMedDaNet.jsonl', 'the file is UTF-16; save it as UTF-8'],
    ]);
    expect(await codes([{ name: 'x.jsonl', data: Buffer.from([0x41, 0xff, 0x41]) }])).toEqual([
      ['BAD_ENCODING', 'x.jsonl', 'the file is not valid UTF-8'],
    ]);
  });

  it('caps line length and line count', async () => {
    const limits = { ...DEFAULT_LIMITS, maxLines: 3, maxLineBytes: 40 };
    const enc = (s: string) => new TextEncoder().encode(s);
    expect(await codes([{ name: 'a.jsonl', data: enc(`${line}\n${line}\n${line}\n`) }], limits)).toEqual([]);
    expect(
      await codes([{ name: 'a.jsonl', data: enc(`${line}\n${line}\n${line}\n${line}`) }], limits),
    ).toEqual([['TOO_MANY_LINES', 'a.jsonl', 'more than 3 lines']]);
    // Counted in bytes: 16 Cyrillic letters are 32 bytes.
    expect(
      await codes([{ name: 'a.jsonl', data: enc(`${line}\n{"a":"${'д'.repeat(18)}"}`) }], limits),
    ).toEqual([['LINE_TOO_LONG', 'a.jsonl', 'line 2 is longer than 40 bytes']]);
  });

  it('refuses an empty upload, too many files and what is not a zip', async () => {
    expect((await readUpload([])).issues.map((i) => i.code)).toEqual(['NO_FILES']);
    const many = Array.from({ length: 17 }, (_, i) => ({
      name: `f${i}.jsonl`,
      data: new Uint8Array([0x7b, 0x7d]),
    }));
    expect((await readUpload(many)).issues.map((i) => i.code)).toEqual(['TOO_MANY_FILES']);
    const r = await readUpload([{ name: 'sub.zip', data: new TextEncoder().encode('PK not really') }]);
    expect(r.issues.map((i) => i.code)).toEqual(['BAD_ZIP']);
  });
});
