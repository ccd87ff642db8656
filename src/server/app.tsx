/**
 * The leaderboard's HTTP application (Hono), composed of named middleware (security headers, private answers kept
 * out of caches, the Host check, the page context with its CSRF token and origin check, body caps) and one route
 * group per concern: boards, submissions, admin, campaigns, static files. Errors leave as `{error, code}` JSON under
 * /api and as a page elsewhere; a crash answers a generic 500 and is logged.
 */
import { Hono } from 'hono';
import { absence, awayInWords } from '../workers/db-wait.js';
import { adminRoutes } from './admin/routes.js';
import { boardRoutes } from './boards/routes.js';
import { campaignRoutes } from './campaigns/routes.js';
import { ChartCache } from './charts.js';
import { HttpError } from './errors.js';
import { healthRoutes } from './health/routes.js';
import { type AppOptions, type Env, isApi, loggedPath, type RouteDeps, render } from './http.js';
import { bodyCaps } from './middleware/body-limit.js';
import { pageContext } from './middleware/context.js';
import { hostCheck } from './middleware/host.js';
import { privateAnswers } from './middleware/private.js';
import { securityHeaders } from './middleware/security-headers.js';
import { RateLimiter } from './rate-limit.js';
import { runRoutes } from './runs/routes.js';
import { staticRoutes } from './static.js';
import { submissionRoutes, UPLOAD_PATHS } from './submissions/routes.js';
import type { PageContext } from './views/layout.js';
import { ErrorPage } from './views/layout.js';

export type { AppOptions } from './http.js';

/** Seconds a client is asked to wait while the database is away. */
const DB_RETRY_AFTER_S = 5;

export function createApp(options: AppOptions): Hono<Env> {
  const { lb, log } = options;
  const deps: RouteDeps = {
    lb,
    log,
    options,
    charts: new ChartCache(lb.scorer),
    reads: new RateLimiter(lb.options.apiPerMinute ?? 0, 60_000),
  };
  lb.boards.useLog(log);
  const app = new Hono<Env>();
  app.use('*', securityHeaders());
  app.use('*', privateAnswers());
  app.use('*', hostCheck(options.allowedHosts));
  app.use('*', pageContext(options));
  app.use('*', bodyCaps(UPLOAD_PATHS));

  app.route('/', boardRoutes(deps));
  app.route('/', submissionRoutes(deps));
  app.route('/', staticRoutes());
  app.route('/', campaignRoutes(lb.campaigns));
  app.route('/', adminRoutes(deps));
  app.route('/', runRoutes(lb.runs, lb));
  // Browsers ask for it on every page; there is none, and saying so quietly keeps their consoles clean.
  app.get('/favicon.ico', (c) => c.body(null, 204));
  app.route('/', healthRoutes(lb));

  app.notFound((c) => {
    if (isApi(c.req.path)) return c.json({ error: 'not found', code: 'NOT_FOUND' }, 404);
    const ctx = c.get('ctx');
    return render(
      c,
      <ErrorPage ctx={ctx} title={ctx.t.notFound} message={ctx.t.noSuchPage(c.req.path)} />,
      404,
    );
  });
  app.onError((err, c) => {
    const ctx = c.get('ctx') as PageContext | undefined;
    if (err instanceof HttpError) {
      if ((err.status === 429 || err.status === 503) && typeof err.extra.retryAfter === 'number')
        c.header('Retry-After', String(err.extra.retryAfter));
      if (isApi(c.req.path) || !ctx)
        return c.json({ error: err.message, code: err.code, ...err.extra }, err.status);
      const message = ctx.t.httpError(err.code, err.status, err.message);
      return render(c, <ErrorPage ctx={ctx} title={`${err.status}`} message={message} />, err.status);
    }
    const away = absence(err);
    if (away) {
      // A restart or a failover of PostgreSQL, or a database dropped or created again empty: said once a request,
      // without a stack; the client is told to come back.
      log.warn(
        `${c.req.method} ${loggedPath(c.req.path)}: the database ${awayInWords(away)} (${(err as Error).message})`,
      );
      c.header('Retry-After', String(DB_RETRY_AFTER_S));
      const message =
        ctx?.t.databaseAway ?? 'the database is unavailable for a moment; try again in a few seconds';
      if (isApi(c.req.path) || !ctx) return c.json({ error: message, code: 'DATABASE_UNAVAILABLE' }, 503);
      return render(c, <ErrorPage ctx={ctx} title="503" message={message} />, 503);
    }
    log.error(
      `${c.req.method} ${loggedPath(c.req.path)}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
    );
    if (isApi(c.req.path) || !ctx) return c.json({ error: 'internal error', code: 'INTERNAL' }, 500);
    return render(c, <ErrorPage ctx={ctx} title={ctx.t.error} message={ctx.t.errorNote} />, 500);
  });
  return app;
}
