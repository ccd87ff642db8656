/**
 * The Host check, first of all: a request for a name this server does not serve is refused (421) before anything
 * else runs, so that a page of another site resolved to this address (DNS rebinding) cannot read it.
 */
import type { MiddlewareHandler } from 'hono';
import { HttpError } from '../errors.js';
import type { Env } from '../http.js';

/** `allowed` is read at each request (a server fills it once it knows its port); empty: no check. */
export const hostCheck =
  (allowed: readonly string[] | undefined): MiddlewareHandler<Env> =>
  async (c, next) => {
    // The request's URL is built from its Host header (node-server), or given whole (in-process requests).
    const host = new URL(c.req.url).host.toLowerCase();
    if (allowed && allowed.length > 0 && !allowed.includes(host)) {
      throw new HttpError(
        421,
        'MISDIRECTED',
        `this server does not answer for the host "${host.slice(0, 100)}"`,
      );
    }
    await next();
  };
