/**
 * Reading forms: an upload's multipart body as a stream with every cap checked as the bytes arrive (only the fields
 * an upload takes), and the small forms of the pages, whose CSRF token is checked on the way.
 */
import type { Context } from 'hono';
import { FIELD_LIMITS } from '../db/schema.js';
import { HttpError } from '../errors.js';
import { checkCsrf, type Env } from '../http.js';
import { type FirstField, readMultipart } from '../multipart.js';
import { UPLOAD_FIELDS } from '../submissions/metadata.js';
import type { UploadLimits } from '../upload.js';

/**
 * The files and metadata of an upload, read as a stream with every cap checked as the bytes arrive; `first`, a field
 * that must come first and is checked before the rest is read (the browser form's CSRF token).
 */
export async function readUploadForm(c: Context<Env>, limits: UploadLimits, first?: FirstField) {
  const { files, fields } = await readMultipart(
    c.req.raw,
    {
      maxBodyBytes: limits.maxBodyBytes,
      maxFiles: limits.maxFiles,
      maxFileBytes: limits.maxFileBytes,
      maxFields: UPLOAD_FIELDS.length + (first ? 1 : 0),
      maxFieldBytes: 4 * FIELD_LIMITS.description,
    },
    first,
  );
  const metadata: Record<string, string> = {};
  for (const [name, value] of fields) {
    if (!UPLOAD_FIELDS.includes(name)) {
      throw new HttpError(
        400,
        'INVALID_METADATA',
        `unknown field "${name.slice(0, 100)}"; an upload takes ${UPLOAD_FIELDS.join(', ')} and \`file\``,
      );
    }
    metadata[name] = value;
  }
  return { files, metadata };
}

/** A small form's fields (urlencoded or multipart, already capped at 64 KiB); its CSRF token is checked. */
export async function readSmallForm(c: Context<Env>): Promise<Record<string, string>> {
  const body = (await c.req.parseBody()) as Record<string, unknown>;
  checkCsrf(c, body);
  const fields: Record<string, string> = {};
  for (const [k, v] of Object.entries(body)) if (k !== '_csrf' && typeof v === 'string') fields[k] = v;
  return fields;
}
