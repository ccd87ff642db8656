/**
 * Private answers: a page or an answer seen with the admin's powers (the admin's pages, any page a signed-in admin
 * opens, which shows closed tests' exact scores) or with an annotator's link is never stored by a browser's or a
 * proxy's cache, so that nobody else is ever served it. Invariant: every such answer says
 * `Cache-Control: private, no-store` and `Vary: Cookie`; a public page does not say `private`.
 */
import type { MiddlewareHandler } from 'hono';
import type { Env } from '../http.js';

/** The admin's pages and APIs, and the annotators' (whose link is their credential), whoever asks. */
const PRIVATE_PATH = /^\/(?:api\/)?(?:admin|annotate)(?:\/|$)/;

const PRIVATE_CACHE_CONTROL = 'private, no-store';

/**
 * Wraps the rest (the page context, which knows whether the admin is signed in, and the routes), and marks the answer
 * on its way out.
 */
export const privateAnswers = (): MiddlewareHandler<Env> => async (c, next) => {
  await next();
  // Read after the route ran: an error answered by onError is marked too. A request refused before the page context
  // ran (the Host check) carries nothing of anybody's.
  const ctx = c.get('ctx') as Env['Variables']['ctx'] | undefined;
  if (!PRIVATE_PATH.test(c.req.path) && ctx?.admin !== true) return;
  c.res.headers.set('Cache-Control', PRIVATE_CACHE_CONTROL);
  // A cache that ignores no-store still keeps the admin's answer apart from everybody else's.
  const vary = c.res.headers.get('Vary');
  if (!vary?.split(',').some((v) => v.trim().toLowerCase() === 'cookie'))
    c.res.headers.set('Vary', vary ? `${vary}, Cookie` : 'Cookie');
};
