/**
 * Answers a client may keep and ask again about: an entity tag that is a digest of the body, `If-None-Match`
 * answered 304 without the body (RFC 9110 §13.1.2, weak comparison), and who may store it (RFC 9111 §5.2).
 * Invariant: an answer says `public` only when its scope is public, and then it sets no cookie; every other answer
 * says `no-store`. (Answers seen with the admin's powers are marked `private, no-store` after this, by `private.ts`.)
 */
import { createHash } from 'node:crypto';
import type { Context } from 'hono';
import type { Env } from '../http.js';

/** How long a shared cache may serve a public board's answer without asking again (seconds). */
export const PUBLIC_MAX_AGE_S = 10;

/** public: any cache may keep it a few seconds; none: nobody keeps it (the closed board, anything else). */
export type CacheScope = 'public' | 'none';

/** A strong entity tag of a body: the first 128 bits of its SHA-256, base64url. */
export const etagOf = (body: string): string =>
  `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;

/** Whether `If-None-Match` names the tag (weak comparison: `W/` ignored), or is `*`. */
export function noneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const bare = etag.replace(/^W\//, '');
  for (const part of header.split(',')) {
    const tag = part.trim();
    if (tag === '*' || tag.replace(/^W\//, '') === bare) return true;
  }
  return false;
}

const CACHE_CONTROL: Record<CacheScope, string> = {
  public: `public, max-age=${PUBLIC_MAX_AGE_S}`,
  none: 'no-store',
};

/** The answer of a body that may be kept: 200 with it, or 304 when the client holds it already. */
export function cacheableAnswer(
  c: Context<Env>,
  answer: { body: string; etag: string; contentType: string; scope: CacheScope },
): Response {
  const headers = { ETag: answer.etag, 'Cache-Control': CACHE_CONTROL[answer.scope] };
  const res = noneMatch(c.req.header('if-none-match'), answer.etag)
    ? c.body(null, 304, headers)
    : c.body(answer.body, 200, { ...headers, 'Content-Type': answer.contentType });
  // A cookie in a stored answer would be handed to everybody the cache serves (the page context sets one on a first
  // visit): a public answer carries none.
  if (answer.scope === 'public') res.headers.delete('Set-Cookie');
  return res;
}
