/**
 * Secrets of the leaderboard: team API tokens, the admin secret and admin sessions are stored only as sha256
 * hashes (a copy of the database signs nobody in); CSRF tokens are derived from a cookie the browser alone holds.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { RumedbenchError } from '../errors.js';

export const sha256Hex = (text: string): string => createHash('sha256').update(text).digest('hex');

/** A new team token: 32 random bytes, prefixed so that a leaked one is recognisable. */
export const newToken = (): string => `rmb_${randomBytes(32).toString('base64url')}`;

const WELL_KNOWN = new Set(
  [
    'admin',
    'administrator',
    'password',
    'changeme',
    'change-me',
    'secret',
    'letmein',
    'qwerty',
    'test',
    'rumedbench',
    'medbench',
    'default',
    'token',
  ].map((w) => w.toLowerCase()),
);

/** Why a proposed admin secret is refused, or undefined: at least 24 characters, not a known word, not a pattern. */
function weakSecret(secret: string): string | undefined {
  if (secret.length < 24) return `it has ${secret.length} characters; at least 24 are needed`;
  const bare = secret.toLowerCase().replace(/[^a-z]/g, '');
  if (WELL_KNOWN.has(secret.toLowerCase()) || (WELL_KNOWN.has(bare) && bare.length >= secret.length / 2))
    return 'it is a well-known word';
  if (new Set(secret).size < 10) return 'it repeats too few characters (fewer than 10 distinct)';
  if (/^(0123456789|abcdefghij|qwertyuiop)/i.test(secret)) return 'it is a keyboard or counting pattern';
  return undefined;
}

export function assertStrongSecret(secret: string, source: string): void {
  const why = weakSecret(secret);
  if (why) throw new RumedbenchError('SERVER_CONFIG', `${source}: the admin secret is refused: ${why}`);
}

export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** A new admin session token for the cookie; the database keeps only its sha256, and sign-out deletes it. */
export const newSessionToken = (): string => randomBytes(32).toString('base64url');

/**
 * The CSRF token of a form: a hash of a secret that only this browser holds, in an httpOnly SameSite=Strict cookie:
 * the admin's session token when signed in (so the token dies with the session), else a random nonce. No key is
 * kept anywhere, so every server process on one database agrees on it.
 */
export const csrfToken = (secret: string): string =>
  createHash('sha256').update(`rumedbench-csrf:${secret}`).digest('base64url');
export const newNonce = (): string => randomBytes(18).toString('base64url');
