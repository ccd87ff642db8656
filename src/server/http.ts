/** What every route group of the leaderboard shares: the request's variables, page rendering, CSRF and admin checks. */
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { safeEqual } from './auth.js';
import { HttpError } from './leaderboard.js';
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
