/**
 * The admin: signing in (a session row in the database, failed attempts throttled per address) and out (the row
 * deleted), every submission with its actions and edits, the team tokens and the audit log; the same actions for
 * scripts with the admin token as a bearer token.
 */
import { Hono } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { HttpError } from '../errors.js';
import { type Env, type RouteDeps, render, requireAdmin } from '../http.js';
import { SESSION_COOKIE } from '../middleware/context.js';
import { readSmallForm } from '../middleware/forms.js';
import { AdminPage, AdminSubmissionPage, LoginPage } from './views.js';

const SESSION_TTL_MS = 8 * 3600_000;

export function adminRoutes({ lb, log, options, charts }: RouteDeps): Hono<Env> {
  const app = new Hono<Env>();
  const admin = lb.admin;
  app.get('/admin/login', (c) => render(c, <LoginPage ctx={c.get('ctx')} />));
  app.post('/admin/login', async (c) => {
    const ctx = c.get('ctx');
    const address = c.get('address');
    const body = await readSmallForm(c);
    if (!(await admin.signIn(address, body.token ?? ''))) {
      log.warn(`admin sign-in refused from ${address}`);
      return render(c, <LoginPage ctx={ctx} failed />, 403);
    }
    const session = await admin.startSession(address, SESSION_TTL_MS);
    setCookie(c, SESSION_COOKIE, session, {
      httpOnly: true,
      sameSite: 'Strict',
      path: '/',
      secure: options.secureCookies ?? false,
      maxAge: SESSION_TTL_MS / 1000,
    });
    return c.redirect(`/admin?lang=${ctx.lang}`, 303);
  });
  app.post('/admin/logout', async (c) => {
    await readSmallForm(c);
    const session = getCookie(c, SESSION_COOKIE);
    if (session) await admin.endSession(session);
    setCookie(c, SESSION_COOKIE, '', { path: '/', maxAge: 0 });
    return c.redirect('/', 303);
  });
  app.get('/admin', async (c) => {
    const ctx = c.get('ctx');
    if (!ctx.admin) return c.redirect(`/admin/login?lang=${ctx.lang}`, 303);
    return render(c, <AdminPage ctx={ctx} {...(await admin.overview())} />);
  });
  app.get('/admin/submissions/:id', async (c) => {
    requireAdmin(c);
    return render(
      c,
      <AdminSubmissionPage ctx={c.get('ctx')} {...(await admin.submission(c.req.param('id')))} />,
    );
  });
  app.post('/admin/submissions/:id/edit', async (c) => {
    requireAdmin(c);
    const fields = await readSmallForm(c);
    await lb.admin.adminEdit(c.req.param('id'), { open_weights: 'no', ...fields });
    charts.clear();
    return c.redirect(`/admin?lang=${c.get('ctx').lang}`, 303);
  });
  app.post('/admin/submissions/:id/:action{[a-z]+}', async (c) => {
    requireAdmin(c);
    await readSmallForm(c);
    await lb.admin.adminAction(c.req.param('id'), c.req.param('action'));
    return c.redirect(`/admin?lang=${c.get('ctx').lang}`, 303);
  });
  // The same actions for scripts, with the admin token as a bearer token.
  app.post('/api/admin/submissions/:id/:action{[a-z]+}', async (c) => {
    await admin.requireBearer(c.get('address'), c.req.header('authorization'));
    if (c.req.param('action') === 'edit') {
      const type = c.req.header('content-type') ?? '';
      let fields: unknown;
      try {
        fields = /json/i.test(type) ? await c.req.json() : await c.req.parseBody();
      } catch (e) {
        throw new HttpError(400, 'BAD_JSON', `the body could not be read: ${(e as Error).message}`);
      }
      if (typeof fields !== 'object' || fields === null || Array.isArray(fields))
        throw new HttpError(400, 'BAD_JSON', 'the body must be a JSON object of submission fields');
      await lb.admin.adminEdit(c.req.param('id'), fields as Record<string, unknown>);
    } else await lb.admin.adminAction(c.req.param('id'), c.req.param('action'));
    return c.json({ ok: true });
  });
  return app;
}
