/**
 * The leaderboard's HTTP application (Hono). Every input is parsed at the route's edge; errors leave as
 * `{error, code}` JSON under /api and as a page elsewhere; a crash answers a generic 500 and is logged. Pages get a
 * strict Content-Security-Policy (no inline script or style), forms a CSRF token bound to a cookie, and uploads a
 * body-size cap checked before the body is parsed.
 */
import { getConnInfo } from '@hono/node-server/conninfo';
import { type Context, Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { getCookie, setCookie } from 'hono/cookie';
import { secureHeaders } from 'hono/secure-headers';
import type { Logger } from '../log.js';
import { STRINGS } from '../report/i18n.js';
import { PAPER_ROWS } from '../report/paper.js';
import { getTask } from '../tasks/registry.js';
import { csrfToken, newNonce, newSessionToken, sha256Hex } from './auth.js';
import { campaignRoutes } from './campaigns/routes.js';
import { campaignsOf } from './campaigns/service.js';
import { ChartCache, comparisonCharts, entryCharts } from './charts.js';
import * as q from './db/queries.js';
import { type BoardName, FIELD_LIMITS } from './db/schema.js';
import { checkCsrf, type Env, isApi, render, requireAdmin } from './http.js';
import { SERVER_STRINGS } from './i18n.js';
import {
  type Entry,
  HttpError,
  type Leaderboard,
  parseMetadata,
  UPLOAD_FIELDS,
  type UploadAnswer,
} from './leaderboard.js';
import { readMultipart } from './multipart.js';
import { RateLimiter } from './rate-limit.js';
import { BOARD_TASKS } from './score-upload.js';
import { ASSET_ETAG, ASSETS } from './static.js';
import { AdminPage, AdminSubmissionPage, LoginPage } from './views/admin.js';
import type { PageContext } from './views/layout.js';
import { BoardPage, ComparePage, ErrorPage, SubmissionPage, UploadPage } from './views/pages.js';

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
  /** Take the client's address from X-Forwarded-For (only behind a proxy you run). */
  trustProxy?: boolean;
  /** Secure cookies (`Secure` attribute): on when the site is served over HTTPS. */
  secureCookies?: boolean;
}

const NONCE_COOKIE = 'rmb_nonce';
const SESSION_COOKIE = 'rmb_admin';
const SESSION_TTL_MS = 8 * 3600_000;
/** Every body but an upload's: forms and JSON answers are small. */
const SMALL_BODY_BYTES = 64 << 10;
/** Failed admin sign-ins per address before it must wait, and for how long. */
const LOGIN_FAILURES = 5;
const LOGIN_WINDOW_MS = 15 * 60_000;
/** Comparisons computed per address and minute (cached ones are free). */
const COMPARES_PER_MINUTE = 30;
const UPLOAD_PATHS = new Set(['/api/submissions', '/submit']);
const BOARDS: readonly BoardName[] = ['public', 'closed'];

function parseBoard(name: string | undefined): BoardName {
  if (name === 'public' || name === 'closed') return name;
  throw new HttpError(404, 'NOT_FOUND', `no board "${name ?? ''}"; boards: ${BOARDS.join(', ')}`);
}

/** RFC 4180 quoting, and a leading quote before =, +, - and @ so that a spreadsheet never runs a cell. */
export function csvCell(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  // Quoted when it holds either separator a spreadsheet may pick (a comma, or the semicolon of Russian locales).
  return /[",;\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

function boardCsv(board: BoardName, entries: Entry[]): string {
  const tasks = BOARD_TASKS[board];
  const header = [
    'rank',
    'id',
    'model',
    'team',
    'kind',
    'params',
    'open_weights',
    'verified',
    'submitted',
    ...tasks.flatMap((t) => getTask(t).metrics.map((m) => `${t}.${m}`)),
    ...tasks.map((t) => `${t}.score`),
    'overall',
  ];
  const rows = entries.map((e, i) => [
    e.overall !== null ? String(i + 1) : '',
    e.id,
    e.model,
    e.team,
    e.kind,
    e.params ?? '',
    String(e.open_weights),
    String(e.verified),
    e.created_at,
    ...tasks.flatMap((t) => getTask(t).metrics.map((m) => e.tasks[t]?.metrics[m]?.toFixed(4) ?? '')),
    ...tasks.map((t) => e.tasks[t]?.score.toFixed(4) ?? ''),
    e.overall?.toFixed(4) ?? '',
  ]);
  return `${[header, ...rows].map((r) => r.map(csvCell).join(',')).join('\r\n')}\r\n`;
}

/** A board entry as the JSON export and the API show it: metadata and aggregate scores, no internals. */
function publicEntry(e: Entry) {
  return {
    id: e.id,
    created_at: e.created_at,
    board: e.board,
    model: e.model,
    team: e.team,
    description: e.description,
    link: e.link,
    kind: e.kind,
    params: e.params,
    open_weights: e.open_weights,
    verified: e.verified,
    flagged: e.flagged,
    duplicate_of: e.duplicate_of,
    overall: e.overall,
    overall_ci: e.overall_ci,
    tasks: e.tasks,
  };
}

export function createApp(options: AppOptions): Hono<Env> {
  const { lb, log } = options;
  const charts = new ChartCache(lb.scorer);
  const app = new Hono<Env>();
  const limits = lb.options.limits;
  const maxMb = Math.round(limits.maxBodyBytes / (1 << 20));

  app.use(
    '*',
    secureHeaders({
      contentSecurityPolicy: {
        defaultSrc: ["'none'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
        baseUri: ["'none'"],
      },
      referrerPolicy: 'same-origin',
      crossOriginResourcePolicy: 'same-origin',
      xFrameOptions: 'DENY',
    }),
  );

  const loginFailures = new RateLimiter(LOGIN_FAILURES, LOGIN_WINDOW_MS);
  const compares = new RateLimiter(COMPARES_PER_MINUTE, 60_000);
  const allowedHosts = options.allowedHosts;

  // The Host first: a request for another name is refused before anything else runs.
  app.use('*', async (c, next) => {
    // The request's URL is built from its Host header (node-server), or given whole (in-process requests).
    const host = new URL(c.req.url).host.toLowerCase();
    if (allowedHosts && allowedHosts.length > 0 && !allowedHosts.includes(host)) {
      throw new HttpError(
        421,
        'MISDIRECTED',
        `this server does not answer for the host "${host.slice(0, 100)}"`,
      );
    }
    await next();
  });

  // The page context: language, the browser's CSRF token, whether the admin is signed in; and the address.
  app.use('*', async (c, next) => {
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
      session !== undefined &&
      /^[\w-]{43}$/.test(session) &&
      (await q.adminSessionAlive(lb.db.db, sha256Hex(session)));
    const url = new URL(c.req.url);
    c.set('ctx', {
      lang,
      t: SERVER_STRINGS[lang],
      r: STRINGS[lang],
      path: `${url.pathname}${url.search}`,
      csrf: csrfToken(admin ? `session:${session}` : `nonce:${nonce}`),
      admin,
    });
    let address = 'unknown';
    const forwarded = options.trustProxy ? c.req.header('x-forwarded-for')?.split(',')[0]?.trim() : undefined;
    if (forwarded) address = forwarded;
    else {
      try {
        address = getConnInfo(c).remote.address ?? 'unknown';
      } catch {
        address = 'local';
      }
    }
    c.set('address', address);
    // A form posted from another site is refused before anything reads it.
    if (c.req.method === 'POST' && !isApi(c.req.path)) {
      const origin = c.req.header('origin');
      const ours = options.publicOrigin ?? url.origin;
      if (origin && origin !== ours) throw new HttpError(403, 'CSRF', SERVER_STRINGS[lang].csrf);
    }
    await next();
  });

  // Every body is capped before a byte of it is read: an upload at the upload limit, anything else at 64 KiB.
  const smallLimit = bodyLimit({
    maxSize: SMALL_BODY_BYTES,
    onError: () => {
      throw new HttpError(
        413,
        'BODY_TOO_LARGE',
        `the request body is larger than ${SMALL_BODY_BYTES >> 10} KiB`,
        {
          limit_bytes: SMALL_BODY_BYTES,
        },
      );
    },
  });
  app.use('*', async (c, next) => {
    if (c.req.method === 'GET' || c.req.method === 'HEAD' || UPLOAD_PATHS.has(c.req.path)) return next();
    return smallLimit(c, next);
  });

  /** The files and metadata of an upload, read as a stream with every cap checked as the bytes arrive. */
  async function readUploadForm(c: Context<Env>, ignore: readonly string[] = []) {
    const { files, fields } = await readMultipart(c.req.raw, {
      maxBodyBytes: limits.maxBodyBytes,
      maxFiles: limits.maxFiles,
      maxFileBytes: limits.maxFileBytes,
      maxFields: UPLOAD_FIELDS.length + ignore.length,
      maxFieldBytes: 4 * FIELD_LIMITS.description,
    });
    const metadata: Record<string, string> = {};
    for (const [name, value] of fields) {
      if (ignore.includes(name)) continue;
      if (!UPLOAD_FIELDS.includes(name)) {
        throw new HttpError(
          400,
          'INVALID_METADATA',
          `unknown field "${name.slice(0, 100)}"; an upload takes ${UPLOAD_FIELDS.join(', ')} and \`file\``,
        );
      }
      metadata[name] = value;
    }
    return { files, metadata };
  }

  /** A small form's fields (urlencoded or multipart, already capped at 64 KiB); its CSRF token is checked. */
  async function readSmallForm(c: Context<Env>): Promise<Record<string, string>> {
    const body = (await c.req.parseBody()) as Record<string, unknown>;
    checkCsrf(c, body);
    const fields: Record<string, string> = {};
    for (const [k, v] of Object.entries(body)) if (k !== '_csrf' && typeof v === 'string') fields[k] = v;
    return fields;
  }

  const withQuotaHeaders = (c: Context<Env>, answer: UploadAnswer, replayed: boolean) => {
    if (answer.quota) {
      c.header('X-Quota-Limit', String(answer.quota.limit));
      c.header('X-Quota-Remaining', String(answer.quota.remaining));
    }
    if (replayed) c.header('Idempotent-Replayed', 'true');
  };

  // Boards

  // A board's page is drawn once per list of entries (the service caches the list) and language.
  const boardHtml = new WeakMap<Entry[], Map<string, string>>();
  const boardPage = async (c: Context<Env>, board: BoardName) => {
    const ctx = c.get('ctx');
    const entries = await lb.board(board);
    let pages = boardHtml.get(entries);
    if (!pages) {
      pages = new Map();
      boardHtml.set(entries, pages);
    }
    const key = `${board}:${ctx.lang}:${ctx.admin}:${ctx.path}`;
    let html = pages.get(key);
    if (html === undefined) {
      html = `<!DOCTYPE html>\n${String(
        <BoardPage
          ctx={ctx}
          board={board}
          entries={entries}
          paperRows={board === 'public' ? PAPER_ROWS : []}
        />,
      )}`;
      if (pages.size < 64) pages.set(key, html);
    }
    return c.html(html);
  };
  app.get('/', (c) => boardPage(c, 'public'));
  app.get('/board/:name{[a-z]+\\.csv}', async (c) => {
    const board = parseBoard(c.req.param('name').replace(/\.csv$/, ''));
    c.header('Content-Type', 'text/csv; charset=utf-8');
    c.header('Content-Disposition', `attachment; filename="rumedbench-${board}.csv"`);
    return c.body(boardCsv(board, await lb.board(board)));
  });
  app.get('/board/:name', (c) => boardPage(c, parseBoard(c.req.param('name'))));
  app.get('/api/boards/:name', async (c) => {
    const board = parseBoard(c.req.param('name'));
    const entries = await lb.board(board);
    return c.json({
      board,
      overall:
        board === 'public' ? 'mean of the five public task scores' : 'mean of the three closed task scores',
      entries: entries.map(publicEntry),
      reference: board === 'public' ? PAPER_ROWS : [],
    });
  });

  // Submissions

  // An upload is authenticated and admitted (rate, quota) from its headers alone, before its body is read.
  app.post('/api/submissions', async (c) => {
    const who = await lb.authenticate(c.req.header('authorization'), c.get('address'));
    await lb.admit(who);
    const { files, metadata } = await readUploadForm(c);
    const key = c.req.header('idempotency-key');
    const { status, body, replayed } = await lb.submit({
      files,
      metadata: parseMetadata(metadata, who),
      who,
      ...(key !== undefined ? { idempotencyKey: key } : {}),
    });
    withQuotaHeaders(c, body, replayed);
    if (status === 201) c.header('Location', `/api/submissions/${body.id}`);
    return c.json(body, status);
  });

  app.get('/api/submissions/:id', async (c) => c.json(publicEntry(await lb.entry(c.req.param('id')))));

  app.get('/submit', (c) => render(c, <UploadPage ctx={c.get('ctx')} maxMb={maxMb} />));
  // The browser's form carries its CSRF token in the action's query, so that it is checked before the body is read.
  app.post('/submit', async (c) => {
    const ctx = c.get('ctx');
    checkCsrf(c, { _csrf: c.req.query('_csrf') });
    const who = await lb.authenticate(undefined, c.get('address'));
    await lb.admit(who);
    const { files, metadata: meta } = await readUploadForm(c, ['_csrf']);
    const { status, body } = await lb.submit({ files, metadata: parseMetadata(meta, who), who });
    if (status === 201 || (status === 200 && body.status === 'scored')) {
      return c.redirect(`/submissions/${body.id}?lang=${ctx.lang}`, 303);
    }
    return render(
      c,
      <UploadPage ctx={ctx} maxMb={maxMb} answer={body} values={meta} />,
      status === 202 ? 200 : 422,
    );
  });

  app.get('/submissions/:id', async (c) => {
    const ctx = c.get('ctx');
    const e = await lb.entry(c.req.param('id'), { admin: ctx.admin });
    const blocks = await charts.draw(`${e.id}:${ctx.lang}:${e.result?.rumedbench_version}:${e.overall}`, () =>
      entryCharts(e, ctx.r),
    );
    const others = e.status === 'scored' ? (await lb.board(e.board)).filter((o) => o.id !== e.id) : [];
    return render(c, <SubmissionPage ctx={ctx} e={e} charts={blocks} others={others} />);
  });

  app.get('/compare', async (c) => {
    const ctx = c.get('ctx');
    const a = c.req.query('a');
    const b = c.req.query('b');
    if (!a || !b) throw new HttpError(400, 'BAD_REQUEST', 'compare needs ?a=ID&b=ID');
    if (!lb.hasComparison(a, b)) {
      const wait = compares.hit(c.get('address'));
      if (wait > 0)
        throw new HttpError(429, 'RATE_LIMITED', `at most ${COMPARES_PER_MINUTE} new comparisons a minute`, {
          retryAfter: wait,
        });
    }
    const r = await lb.compare(a, b);
    const blocks = r.comparison
      ? await charts.draw(`cmp:${a}:${b}:${ctx.lang}`, () =>
          comparisonCharts(r.comparison as NonNullable<typeof r.comparison>, r.b, ctx.r),
        )
      : [];
    return render(c, <ComparePage ctx={ctx} a={r.a} b={r.b} comparison={r.comparison} charts={blocks} />);
  });

  // Static files and health

  app.get('/static/style.css', (c) => {
    c.header('Content-Type', 'text/css; charset=utf-8');
    c.header('ETag', ASSET_ETAG);
    c.header('Cache-Control', 'public, max-age=3600');
    return c.body(ASSETS.css);
  });
  app.get('/static/app.js', (c) => {
    c.header('Content-Type', 'text/javascript; charset=utf-8');
    c.header('ETag', ASSET_ETAG);
    c.header('Cache-Control', 'public, max-age=3600');
    return c.body(ASSETS.js);
  });
  app.get('/static/annotate.js', (c) => {
    c.header('Content-Type', 'text/javascript; charset=utf-8');
    c.header('ETag', ASSET_ETAG);
    c.header('Cache-Control', 'public, max-age=3600');
    return c.body(ASSETS.annotate);
  });
  app.route('/', campaignRoutes(campaignsOf(lb)));
  // Browsers ask for it on every page; there is none, and saying so quietly keeps their consoles clean.
  app.get('/favicon.ico', (c) => c.body(null, 204));
  app.get('/healthz', (c) => c.json({ ok: true, engine: lb.db.engine }));

  // Admin

  app.get('/admin/login', (c) => render(c, <LoginPage ctx={c.get('ctx')} />));
  app.post('/admin/login', async (c) => {
    const ctx = c.get('ctx');
    const address = c.get('address');
    const wait = loginFailures.retryAfter(address);
    if (wait > 0) {
      throw new HttpError(
        429,
        'RATE_LIMITED',
        `too many failed sign-ins from this address; try again in ${wait} s`,
        {
          retryAfter: wait,
        },
      );
    }
    const body = await readSmallForm(c);
    const token = body.token ?? '';
    if (!(await lb.isAdminSecret(token))) {
      loginFailures.hit(address);
      log.warn(`admin sign-in refused from ${address}`);
      return render(c, <LoginPage ctx={ctx} failed />, 403);
    }
    loginFailures.reset(address);
    const session = newSessionToken();
    await q.createAdminSession(lb.db.db, {
      token_hash: sha256Hex(session),
      expires_at: new Date(Date.now() + SESSION_TTL_MS).toISOString(),
      address,
    });
    setCookie(c, SESSION_COOKIE, session, {
      httpOnly: true,
      sameSite: 'Strict',
      path: '/',
      secure: options.secureCookies ?? false,
      maxAge: SESSION_TTL_MS / 1000,
    });
    await q.addAudit(lb.db.db, 'admin', 'sign-in', null, { address });
    return c.redirect(`/admin?lang=${ctx.lang}`, 303);
  });
  app.post('/admin/logout', async (c) => {
    await readSmallForm(c);
    const session = getCookie(c, SESSION_COOKIE);
    if (session) await q.endAdminSession(lb.db.db, sha256Hex(session));
    setCookie(c, SESSION_COOKIE, '', { path: '/', maxAge: 0 });
    return c.redirect('/', 303);
  });
  app.get('/admin', async (c) => {
    const ctx = c.get('ctx');
    if (!ctx.admin) return c.redirect(`/admin/login?lang=${ctx.lang}`, 303);
    return render(
      c,
      <AdminPage
        ctx={ctx}
        rows={await lb.adminList()}
        tokens={await q.listTokens(lb.db.db)}
        audit={await q.listAudit(lb.db.db)}
      />,
    );
  });
  app.get('/admin/submissions/:id', async (c) => {
    requireAdmin(c);
    const row = await q.getSubmission(lb.db.db, c.req.param('id'));
    if (!row) throw new HttpError(404, 'NOT_FOUND', `no submission ${c.req.param('id')}`);
    const entry = await lb.entry(row.id, { admin: true });
    return render(
      c,
      <AdminSubmissionPage
        ctx={c.get('ctx')}
        row={row}
        entry={entry}
        files={JSON.parse(row.files) as { name: string; chars: number }[]}
      />,
    );
  });
  app.post('/admin/submissions/:id/edit', async (c) => {
    requireAdmin(c);
    const fields = await readSmallForm(c);
    await lb.adminEdit(c.req.param('id'), { open_weights: 'no', ...fields });
    charts.clear();
    return c.redirect(`/admin?lang=${c.get('ctx').lang}`, 303);
  });
  app.post('/admin/submissions/:id/:action{[a-z]+}', async (c) => {
    requireAdmin(c);
    await readSmallForm(c);
    await lb.adminAction(c.req.param('id'), c.req.param('action'));
    return c.redirect(`/admin?lang=${c.get('ctx').lang}`, 303);
  });
  // The same actions for scripts, with the admin token as a bearer token.
  app.post('/api/admin/submissions/:id/:action{[a-z]+}', async (c) => {
    const m = /^Bearer\s+(\S+)$/i.exec(c.req.header('authorization') ?? '');
    if (!m || !(await lb.isAdminSecret(m[1] as string)))
      throw new HttpError(401, 'ADMIN_ONLY', 'send the admin token as Authorization: Bearer');
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
      await lb.adminEdit(c.req.param('id'), fields as Record<string, unknown>);
    } else await lb.adminAction(c.req.param('id'), c.req.param('action'));
    return c.json({ ok: true });
  });

  // Errors

  app.notFound((c) => {
    if (isApi(c.req.path)) return c.json({ error: 'not found', code: 'NOT_FOUND' }, 404);
    const ctx = c.get('ctx');
    return render(c, <ErrorPage ctx={ctx} title={ctx.t.notFound} message={c.req.path} />, 404);
  });
  app.onError((err, c) => {
    const ctx = c.get('ctx') as PageContext | undefined;
    if (err instanceof HttpError) {
      if (err.status === 429 && typeof err.extra.retryAfter === 'number')
        c.header('Retry-After', String(err.extra.retryAfter));
      if (isApi(c.req.path) || !ctx)
        return c.json({ error: err.message, code: err.code, ...err.extra }, err.status);
      return render(c, <ErrorPage ctx={ctx} title={`${err.status}`} message={err.message} />, err.status);
    }
    log.error(
      `${c.req.method} ${c.req.path}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
    );
    if (isApi(c.req.path) || !ctx) return c.json({ error: 'internal error', code: 'INTERNAL' }, 500);
    return render(c, <ErrorPage ctx={ctx} title={ctx.t.error} message={ctx.t.errorNote} />, 500);
  });
  return app;
}
