/**
 * Every body is capped before a byte of it is read: an upload's by its own reader, at the upload limit, while it
 * streams (routes in `uploadPaths`); anything else at 64 KiB here (forms and JSON answers are small).
 */
import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HttpError } from '../errors.js';
import type { Env } from '../http.js';

export const SMALL_BODY_BYTES = 64 << 10;

export function bodyCaps(uploadPaths: ReadonlySet<string>): MiddlewareHandler<Env> {
  const small = bodyLimit({
    maxSize: SMALL_BODY_BYTES,
    onError: () => {
      throw new HttpError(
        413,
        'BODY_TOO_LARGE',
        `the request body is larger than ${SMALL_BODY_BYTES >> 10} KiB`,
        {
          limit_bytes: SMALL_BODY_BYTES,
        },
      );
    },
  });
  return async (c, next) => {
    if (c.req.method === 'GET' || c.req.method === 'HEAD' || uploadPaths.has(c.req.path)) return next();
    return small(c, next);
  };
}
