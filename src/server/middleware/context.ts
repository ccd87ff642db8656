/**
 * The page context of every request: its language, the browser's CSRF token, whether the admin is signed in (a
 * session is a row in the database), and the client's address; and a form posted from another origin is refused
 * here, before anything reads it.
 */
import { getConnInfo } from '@hono/node-server/conninfo';
import type { MiddlewareHandler } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { STRINGS } from '../../report/i18n.js';
import { csrfToken, newNonce } from '../auth.js';
import { clientAddress } from '../client-address.js';
import { HttpError } from '../errors.js';
import { type AppOptions, type Env, isApi } from '../http.js';
import { SERVER_STRINGS } from '../i18n.js';

const NONCE_COOKIE = 'rmb_nonce';
export const SESSION_COOKIE = 'rmb_admin';

export const pageContext =
  (options: AppOptions): MiddlewareHandler<Env> =>
  async (c, next) => {
    const { lb } = options;
    const asked = c.req.query('lang');
    const lang =
      asked === 'ru' || asked === 'en'
        ? asked
        : /^\s*ru\b/i.test(c.req.header('accept-language') ?? '')
          ? 'ru'
          : 'en';
    let nonce = getCookie(c, NONCE_COOKIE);
    if (!nonce || !/^[\w-]{16,64}$/.test(nonce)) {
      nonce = newNonce();
      setCookie(c, NONCE_COOKIE, nonce, {
        httpOnly: true,
        sameSite: 'Strict',
        path: '/',
        secure: options.secureCookies ?? false,
      });
    }
    // A session is a row in the database: sign-out deletes it, and a copied database signs nobody in.
    const session = getCookie(c, SESSION_COOKIE);
    const admin =
      session !== undefined && /^[\w-]{43}$/.test(session) && (await lb.admin.sessionAlive(session));
    const url = new URL(c.req.url);
    c.set('ctx', {
      lang,
      t: SERVER_STRINGS[lang],
      r: STRINGS[lang],
      path: `${url.pathname}${url.search}`,
      csrf: csrfToken(admin ? `session:${session}` : `nonce:${nonce}`),
      admin,
    });
    let peer: string;
    try {
      peer = getConnInfo(c).remote.address ?? 'unknown';
    } catch {
      peer = 'local';
    }
    c.set('address', clientAddress(peer, c.req.header('x-forwarded-for'), options.trustedProxies ?? 0));
    // A form posted from another site is refused before anything reads it.
    if (c.req.method === 'POST' && !isApi(c.req.path)) {
      const origin = c.req.header('origin');
      const ours = options.publicOrigin ?? url.origin;
      if (origin && origin !== ours) throw new HttpError(403, 'CSRF', SERVER_STRINGS[lang].csrf);
    }
    await next();
  };
