/**
 * Secrets of the leaderboard: team API tokens and the admin secret are stored only as sha256 hashes; the admin's
 * browser session and the forms' CSRF tokens are HMACs under a random key kept in the database, so that several
 * server processes on one PostgreSQL accept each other's sessions.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
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
export function weakSecret(secret: string): string | undefined {
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

const hmac = (key: string, text: string): string =>
  createHmac('sha256', key).update(text).digest('base64url');

/** An admin session cookie: `expiry.mac`. */
export function sessionCookie(key: string, ttlMs: number, now = Date.now()): string {
  const expires = String(now + ttlMs);
  return `${expires}.${hmac(key, `admin:${expires}`)}`;
}

export function validSession(key: string, cookie: string | undefined, now = Date.now()): boolean {
  if (!cookie) return false;
  const [expires, mac] = cookie.split('.');
  if (!expires || !mac || !/^\d+$/.test(expires) || Number(expires) < now) return false;
  return safeEqual(mac, hmac(key, `admin:${expires}`));
}

/** The CSRF token of a browser: an HMAC of the random nonce in its cookie. */
export const csrfToken = (key: string, nonce: string): string => hmac(key, `csrf:${nonce}`);
export const newNonce = (): string => randomBytes(18).toString('base64url');
