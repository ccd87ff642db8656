/**
 * Every body is capped before a byte of it is read: an upload's by its own reader, at the upload limit, while it
 * streams (routes in `uploadPaths`); the admin's campaign forms at 256 KiB (guidelines of 20,000 Cyrillic characters,
 * percent-encoded, take some 120 KB); anything else at 64 KiB (sign-in, admin actions, an annotator's answer).
 */
import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HttpError } from '../errors.js';
import type { Env } from '../http.js';

const SMALL_BODY_BYTES = 64 << 10;
const CAMPAIGN_FORM_BYTES = 256 << 10;

const capAt = (bytes: number) =>
  bodyLimit({
    maxSize: bytes,
    onError: () => {
      throw new HttpError(413, 'BODY_TOO_LARGE', `the request body is larger than ${bytes >> 10} KiB`, {
        limit_bytes: bytes,
      });
    },
  });

export function bodyCaps(uploadPaths: ReadonlySet<string>): MiddlewareHandler<Env> {
  const small = capAt(SMALL_BODY_BYTES);
  const campaignForm = capAt(CAMPAIGN_FORM_BYTES);
  return async (c, next) => {
    if (c.req.method === 'GET' || c.req.method === 'HEAD' || uploadPaths.has(c.req.path)) return next();
    return (c.req.path.startsWith('/admin/campaigns') ? campaignForm : small)(c, next);
  };
}
