/**
 * Reading a multipart/form-data body as a stream (busboy), with caps on parts, files, fields and sizes checked while
 * the bytes arrive: a body of 150,000 empty parts is refused at part 65, not parsed whole first. Field names go into
 * a Map, so `__proto__` is a name like any other (and the caller refuses names it does not know).
 */
import { Readable } from 'node:stream';
import busboy from 'busboy';
import { HttpError } from './errors.js';
import { mib, type UploadFile } from './upload.js';

interface FormLimits {
  /** Bytes of the whole body: a Content-Length over it is refused unread, and a chunked body is cut there. */
  maxBodyBytes: number;
  maxFiles: number;
  maxFileBytes: number;
  maxFields: number;
  /** Bytes of one text field. */
  maxFieldBytes: number;
}

/**
 * A field that must be the body's first part, checked before another byte is read: the browser's upload form puts
 * its CSRF token there, so a forged post is refused (and admitted to nothing) at its first part. `check` gets the
 * field's value, or `undefined` when the first part is anything else or there is none; it throws to refuse.
 */
export interface FirstField {
  name: string;
  check: (value: string | undefined) => Promise<void>;
}

interface ReadForm {
  files: UploadFile[];
  fields: Map<string, string>;
}

export async function readMultipart(req: Request, limits: FormLimits, first?: FirstField): Promise<ReadForm> {
  const type = req.headers.get('content-type') ?? '';
  if (!/^multipart\/form-data/i.test(type) || !req.body) {
    throw new HttpError(
      415,
      'UNSUPPORTED_MEDIA_TYPE',
      'send multipart/form-data with one or more `file` fields',
    );
  }
  const tooLarge = () =>
    new HttpError(413, 'UPLOAD_TOO_LARGE', `the request body is larger than ${mib(limits.maxBodyBytes)}`, {
      limit_bytes: limits.maxBodyBytes,
    });
  const declared = Number(req.headers.get('content-length') ?? Number.NaN);
  if (declared > limits.maxBodyBytes) throw tooLarge();
  let bb: busboy.Busboy;
  try {
    bb = busboy({
      headers: { 'content-type': type },
      limits: {
        fieldNameSize: 100,
        fieldSize: limits.maxFieldBytes,
        fields: limits.maxFields,
        files: limits.maxFiles,
        fileSize: limits.maxFileBytes,
        parts: limits.maxFiles + limits.maxFields,
        headerPairs: 20,
      },
    });
  } catch (e) {
    throw new HttpError(
      400,
      'BAD_MULTIPART',
      `the multipart body could not be read: ${(e as Error).message}`,
    );
  }
  const source = Readable.fromWeb(req.body as import('node:stream/web').ReadableStream<Uint8Array>);
  return new Promise<ReadForm>((resolve, reject) => {
    let bytes = 0;
    source.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > limits.maxBodyBytes) fail(tooLarge());
    });
    const files: UploadFile[] = [];
    const fields = new Map<string, string>();
    const pending: Promise<void>[] = [];
    let failed = false;
    const fail = (e: unknown) => {
      if (failed) return;
      failed = true;
      source.unpipe(bb);
      source.destroy();
      reject(e);
    };
    // The first field's check runs with the body unpiped, so nothing more is pulled until it has answered.
    let firstSeen = first === undefined;
    const checkFirst = (value: string | undefined) => {
      firstSeen = true;
      source.unpipe(bb);
      pending.push(
        (first as FirstField).check(value).then(() => {
          if (!failed) source.pipe(bb);
        }, fail),
      );
    };
    const tooMany = (what: string, n: number) => () =>
      fail(new HttpError(413, 'TOO_MANY_PARTS', `the form has more than ${n} ${what}`, { limit: n }));
    bb.on('partsLimit', tooMany('parts', limits.maxFiles + limits.maxFields));
    bb.on('filesLimit', tooMany('files', limits.maxFiles));
    bb.on('fieldsLimit', tooMany('fields', limits.maxFields));
    bb.on('field', (name, value, info) => {
      if (info.valueTruncated || info.nameTruncated) {
        fail(
          new HttpError(
            400,
            'INVALID_METADATA',
            `the field "${name.slice(0, 100)}" is longer than ${limits.maxFieldBytes} bytes`,
          ),
        );
        return;
      }
      if (!firstSeen) {
        checkFirst(name === first?.name ? value : undefined);
        return;
      }
      if (name === 'file') return; // a file input sent without a file
      if (fields.has(name)) {
        fail(new HttpError(400, 'INVALID_METADATA', `the field "${name}" is given twice`));
        return;
      }
      fields.set(name, value);
    });
    bb.on('file', (name, stream, info) => {
      if (!firstSeen) {
        stream.resume();
        checkFirst(undefined);
        return;
      }
      if (name !== 'file') {
        stream.resume();
        fail(
          new HttpError(
            400,
            'INVALID_METADATA',
            `a file in the field "${name.slice(0, 100)}"; files go in "file"`,
          ),
        );
        return;
      }
      const chunks: Buffer[] = [];
      pending.push(
        new Promise<void>((done) => {
          stream.on('data', (c: Buffer) => chunks.push(c));
          stream.on('limit', () =>
            fail(
              new HttpError(
                413,
                'UPLOAD_TOO_LARGE',
                `the file "${info.filename}" is larger than ${limits.maxFileBytes} bytes`,
                {
                  limit_bytes: limits.maxFileBytes,
                },
              ),
            ),
          );
          stream.on('end', () => {
            const data = Buffer.concat(chunks);
            // An empty file input: no name, no bytes.
            if (!(data.length === 0 && !info.filename))
              files.push({ name: info.filename ?? '', data: new Uint8Array(data) });
            done();
          });
        }),
      );
    });
    bb.on('error', (e: Error) =>
      fail(new HttpError(400, 'BAD_MULTIPART', `the multipart body could not be read: ${e.message}`)),
    );
    bb.on('close', () => {
      if (!firstSeen) checkFirst(undefined); // a body without parts
      void Promise.all(pending).then(() => {
        if (!failed) resolve({ files, fields });
      });
    });
    source.on('error', (e) =>
      fail(new HttpError(400, 'BAD_MULTIPART', `the body could not be read: ${e.message}`)),
    );
    source.pipe(bb);
  });
}
