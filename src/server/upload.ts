/**
 * Reading an upload as hostile bytes. A zip is read from memory with yauzl (nothing is written to disk), its central
 * directory's entry count capped before any entry is read, and every entry's bytes counted while it inflates: the
 * sizes in a zip's headers can lie. Names with `..`, absolute paths, backslashes, NUL or a repeat are refused, and
 * so are archives inside the archive. Text must be UTF-8 (decoded in fatal mode; a Windows-1251 or UTF-16 file is
 * named as such), with a BOM and CRLF line ends accepted, and each file's line count and line length capped.
 */
import yauzl from 'yauzl';
import { decodeUtf8, encodingMessage, TextEncodingError } from '../data/text.js';
import type { SubmissionIssue } from '../scoring/issues.js';
import type { NamedText } from '../scoring/submission.js';

export interface UploadLimits {
  /** Bytes of the request body: checked before it is parsed. */
  maxBodyBytes: number;
  /** Files in the upload, and entries in a zip (folders included). */
  maxFiles: number;
  /** Bytes of one file once inflated. */
  maxFileBytes: number;
  /** Bytes of all files once inflated. */
  maxTotalBytes: number;
  /** Inflated over compressed size of a zip entry, checked once an entry passes 1 MiB. */
  maxRatio: number;
  maxLines: number;
  maxLineBytes: number;
}

export const DEFAULT_LIMITS: UploadLimits = {
  maxBodyBytes: 16 << 20,
  maxFiles: 16,
  maxFileBytes: 16 << 20,
  maxTotalBytes: 48 << 20,
  maxRatio: 200,
  maxLines: 50_000,
  maxLineBytes: 256 << 10,
};

export interface UploadFile {
  name: string;
  data: Uint8Array;
}

interface ReadUpload {
  entries: NamedText[];
  issues: SubmissionIssue[];
  /** Bytes read in all (inflated). */
  bytes: number;
}

const ARCHIVE = /\.(zip|gz|tgz|tar|bz2|xz|7z|rar|zst|jar)$/i;
/** Bytes as MiB for messages (`16 MiB`, `1.5 MiB`). */
export const mib = (n: number): string => `${(n / (1 << 20)).toFixed(n % (1 << 20) === 0 ? 0 : 1)} MiB`;

class UploadProblem extends Error {
  constructor(readonly issue: SubmissionIssue) {
    super(issue.message);
  }
}

const problem = (
  code: SubmissionIssue['code'],
  file: string,
  message: string,
  extra: Partial<SubmissionIssue> = {},
) => new UploadProblem({ severity: 'error', code, file, message, ...extra });

/** Why a file name cannot be accepted, or undefined. */
function badName(name: string): string | undefined {
  if (name.includes('\0')) return 'contains a NUL character';
  if (name.includes('\\')) return 'contains a backslash';
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) return 'is an absolute path';
  if (name.split('/').some((part) => part === '..')) return 'climbs out of the archive (..)';
  if (name.length > 255) return 'is longer than 255 characters';
  return undefined;
}

/** Decodes UTF-8 strictly and checks the line caps; a wrong encoding is named. */
function decodeText(bytes: Uint8Array, file: string, limits: UploadLimits): string {
  let text: string;
  try {
    text = decodeUtf8(bytes, file);
  } catch (e) {
    if (!(e instanceof TextEncodingError)) throw e;
    throw problem('BAD_ENCODING', file, encodingMessage(e.found), { expected: 'UTF-8', found: e.found });
  }
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  if (lines.length > limits.maxLines) {
    throw problem('TOO_MANY_LINES', file, `more than ${limits.maxLines} lines`, {
      expected: `at most ${limits.maxLines} lines`,
    });
  }
  const long = lines.findIndex(
    (l) => l.length > limits.maxLineBytes / 3 && Buffer.byteLength(l) > limits.maxLineBytes,
  );
  if (long >= 0) {
    throw problem('LINE_TOO_LONG', file, `line ${long + 1} is longer than ${limits.maxLineBytes} bytes`, {
      line: long + 1,
    });
  }
  return text;
}

function openZip(buffer: Buffer): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(
      buffer,
      {
        lazyEntries: true,
        validateEntrySizes: true,
        strictFileNames: true,
        decodeStrings: true,
        autoClose: true,
      },
      (err, zip) => (err || !zip ? reject(err ?? new Error('no zip')) : resolve(zip)),
    );
  });
}

/** Inflates one entry, counting its bytes against the caps as they arrive. */
function inflate(
  zip: yauzl.ZipFile,
  entry: yauzl.Entry,
  display: string,
  limits: UploadLimits,
  totalSoFar: number,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    zip.openReadStream(entry, (err, stream) => {
      if (err || !stream) return reject(err ?? new Error('no stream'));
      const chunks: Buffer[] = [];
      let n = 0;
      const fail = (p: UploadProblem) => {
        stream.destroy();
        reject(p);
      };
      stream.on('data', (chunk: Buffer) => {
        n += chunk.length;
        if (n > limits.maxFileBytes)
          return fail(
            problem('UPLOAD_TOO_LARGE', display, `larger than ${mib(limits.maxFileBytes)} once inflated`),
          );
        if (totalSoFar + n > limits.maxTotalBytes)
          return fail(
            problem(
              'UPLOAD_TOO_LARGE',
              display,
              `the files add up to more than ${mib(limits.maxTotalBytes)} inflated`,
            ),
          );
        if (n > 1 << 20 && n > limits.maxRatio * Math.max(1, entry.compressedSize))
          return fail(
            problem(
              'ZIP_BOMB',
              display,
              `inflates more than ${limits.maxRatio} times its compressed size; refused`,
            ),
          );
        chunks.push(chunk);
      });
      stream.on('error', (e) =>
        reject(
          /too many bytes/i.test(e.message)
            ? problem('ZIP_BOMB', display, 'the entry inflates beyond the size its header declares; refused')
            : e,
        ),
      );
      stream.on('end', () => resolve(Buffer.concat(chunks)));
    });
  });
}

async function readZip(
  file: UploadFile,
  limits: UploadLimits,
  total: { bytes: number },
): Promise<NamedText[]> {
  let zip: yauzl.ZipFile;
  try {
    zip = await openZip(Buffer.from(file.data.buffer, file.data.byteOffset, file.data.byteLength));
  } catch (e) {
    throw problem('BAD_ZIP', file.name, `not a readable zip: ${(e as Error).message}`);
  }
  if (zip.entryCount > limits.maxFiles) {
    zip.close();
    throw problem('TOO_MANY_FILES', file.name, `the zip holds ${zip.entryCount} entries`, {
      expected: `at most ${limits.maxFiles}`,
    });
  }
  const out: NamedText[] = [];
  const seen = new Set<string>();
  return new Promise((resolve, reject) => {
    const stop = (e: unknown) => {
      zip.close();
      reject(
        e instanceof UploadProblem
          ? e
          : /file ?name|relative path|absolute path|invalid characters/i.test((e as Error).message)
            ? problem('BAD_FILE_NAME', file.name, `an entry's name is refused: ${(e as Error).message}`)
            : problem('BAD_ZIP', file.name, `not a readable zip: ${(e as Error).message}`),
      );
    };
    zip.on('error', stop);
    zip.on('end', () => resolve(out));
    zip.on('entry', (entry: yauzl.Entry) => {
      const name = entry.fileName;
      const display = `${file.name}!${name}`;
      const why = badName(name);
      if (why)
        return stop(
          problem('BAD_FILE_NAME', display, `the entry's name ${why}`, { found: JSON.stringify(name) }),
        );
      if (name.endsWith('/')) return zip.readEntry();
      const key = name.normalize('NFC').toLowerCase();
      if (seen.has(key)) return stop(problem('DUPLICATE_FILE', display, 'the zip holds this name twice'));
      seen.add(key);
      if (ARCHIVE.test(name))
        return stop(problem('NESTED_ARCHIVE', display, 'archives inside the archive are refused'));
      inflate(zip, entry, display, limits, total.bytes).then((bytes) => {
        total.bytes += bytes.length;
        try {
          const text = decodeText(bytes, display, limits);
          out.push({ name, text: () => text });
        } catch (e) {
          return stop(e);
        }
        zip.readEntry();
      }, stop);
    });
    zip.readEntry();
  });
}

/**
 * Reads the uploaded files: zips are opened, `.jsonl` files taken as they are. Every refusal comes back as an
 * issue naming the file; nothing throws for a user's bytes.
 */
export async function readUpload(
  files: readonly UploadFile[],
  limits: UploadLimits = DEFAULT_LIMITS,
): Promise<ReadUpload> {
  const issues: SubmissionIssue[] = [];
  const entries: NamedText[] = [];
  const total = { bytes: 0 };
  if (files.length === 0) {
    issues.push({
      severity: 'error',
      code: 'NO_FILES',
      file: '(upload)',
      message: 'no file in the upload',
      expected: 'a .zip or <Task>.jsonl files in `file` fields',
    });
    return { entries, issues, bytes: 0 };
  }
  if (files.length > limits.maxFiles) {
    issues.push({
      severity: 'error',
      code: 'TOO_MANY_FILES',
      file: '(upload)',
      message: `${files.length} files in the upload`,
      expected: `at most ${limits.maxFiles}`,
    });
    return { entries, issues, bytes: 0 };
  }
  const names = new Set<string>();
  try {
    for (const f of files) {
      const why = badName(f.name);
      if (why) throw problem('BAD_FILE_NAME', JSON.stringify(f.name), `the file name ${why}`);
      if (names.has(f.name.toLowerCase())) throw problem('DUPLICATE_FILE', f.name, 'two files of this name');
      names.add(f.name.toLowerCase());
      if (/\.zip$/i.test(f.name)) {
        entries.push(...(await readZip(f, limits, total)));
      } else if (ARCHIVE.test(f.name)) {
        throw problem('NESTED_ARCHIVE', f.name, 'only .zip archives are read', {
          expected: '.zip or .jsonl',
        });
      } else {
        if (f.data.length > limits.maxFileBytes)
          throw problem('UPLOAD_TOO_LARGE', f.name, `larger than ${mib(limits.maxFileBytes)}`);
        total.bytes += f.data.length;
        const text = decodeText(f.data, f.name, limits);
        entries.push({ name: f.name.slice(f.name.lastIndexOf('/') + 1), text: () => text });
      }
    }
  } catch (e) {
    if (e instanceof UploadProblem) return { entries: [], issues: [e.issue], bytes: total.bytes };
    throw e;
  }
  return { entries, issues, bytes: total.bytes };
}
