/** What every route group of the leaderboard shares: the request's variables, page rendering, CSRF and admin checks. */

import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { Logger } from '../log.js';
import { safeEqual } from './auth.js';
import type { ChartCache } from './charts.js';
import { addressKey, type TrustedProxies } from './client-address.js';
import { HttpError } from './errors.js';
import type { Leaderboard } from './leaderboard.js';
import type { RateLimiter } from './rate-limit.js';
import type { PageContext } from './views/layout.js';

export type Env = { Variables: { ctx: PageContext; address: string } };

/** A page: the doctype, then the view (hono/jsx escapes every string in it). */
export const render = (c: Context<Env>, page: unknown, status: ContentfulStatusCode = 200) =>
  c.html(`<!DOCTYPE html>\n${String(page)}`, status);

/** A form's `_csrf` field must be the token bound to this browser's cookie. */
export function checkCsrf(c: Context<Env>, body: Record<string, unknown>): void {
  const given = body._csrf;
  if (typeof given !== 'string' || !safeEqual(given, c.get('ctx').csrf)) {
    throw new HttpError(403, 'CSRF', c.get('ctx').t.csrf);
  }
}

export function requireAdmin(c: Context<Env>): void {
  if (!c.get('ctx').admin) throw new HttpError(401, 'ADMIN_ONLY', 'sign in as the admin first');
}

export const isApi = (path: string): boolean => path.startsWith('/api/');

/** A request path as the log shows it: an annotator's link is its token, which a log must never hold. */
export const loggedPath = (path: string): string => path.replace(/(\/annotate\/)[^/]+/, '$1…');

export interface AppOptions {
  lb: Leaderboard;
  log: Logger;
  /**
   * The Host headers this server answers (`host[:port]`, lower case); any other is refused (421), so that a page
   * of another site resolved to this address (DNS rebinding) cannot read it. Unset or empty: no check. Read at each
   * request, so that a server may fill it once it knows its port.
   */
  allowedHosts?: readonly string[];
  /** The origin browsers see (behind a proxy): forms must come from it. Unset: the request's own origin. */
  publicOrigin?: string;
  /**
   * Proxies of yours in front of the server (client-address.ts): their addresses and networks, whose connections
   * alone have X-Forwarded-For read; or a bare hop count (read from whoever connects). 0 or unset: the socket's peer.
   */
  trustedProxies?: TrustedProxies;
  /** Secure cookies (`Secure` attribute): on when the site is served over HTTPS. */
  secureCookies?: boolean;
}

/** What the route groups share: the service, the log, the options, the chart cache and the reads' rate. */
export interface RouteDeps {
  lb: Leaderboard;
  log: Logger;
  options: AppOptions;
  charts: ChartCache;
  /**
   * Reads per address and minute (`apiPerMinute`): the boards' API and CSV, and every page that draws charts (a
   * board, an entry, a comparison), one count for all of them, so that pages cannot be used to burn CPU either.
   */
  reads: RateLimiter;
}

/**
 * Counts one request of the client's address (IPv6: its /64) on `limiter`; past its limit, a 429 with Retry-After
 * (`what` says what is counted, in the message).
 */
export function limitAddress(c: Context<Env>, limiter: RateLimiter, what: string): void {
  const wait = limiter.hit(addressKey(c.get('address')));
  if (wait > 0)
    throw new HttpError(429, 'RATE_LIMITED', `at most ${limiter.limit} ${what} a minute per address`, {
      retryAfter: wait,
    });
}

/** One read of the boards (`RouteDeps.reads`): their API and CSV, or a page that draws charts. */
export const limitReads = (c: Context<Env>, reads: RateLimiter): void =>
  limitAddress(c, reads, "reads of the boards' API, exports and pages");
