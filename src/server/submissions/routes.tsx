/**
 * Submissions: uploads by API and by the browser's form (authenticated and admitted from their headers before a byte
 * of the body is read), a submission's page and JSON, and the paired comparison of two.
 */
import { type Context, Hono } from 'hono';
import { publicEntry } from '../boards/present.js';
import { comparisonCharts, entryCharts } from '../charts.js';
import { HttpError } from '../errors.js';
import { checkCsrf, type Env, limitAddress, limitReads, type RouteDeps, render } from '../http.js';
import type { Quota, UploadAnswer } from '../leaderboard.js';
import { readUploadForm } from '../middleware/forms.js';
import { RateLimiter } from '../rate-limit.js';
import { parseMetadata } from './metadata.js';
import { ComparePage, SubmissionPage, UploadPage } from './views.js';

/** The paths whose bodies are uploads (capped by their own reader, not by the 64 KiB body cap). */
export const UPLOAD_PATHS: ReadonlySet<string> = new Set(['/api/submissions', '/submit']);
/** Comparisons computed per address and minute (cached ones are free). */
const COMPARES_PER_MINUTE = 30;

export function submissionRoutes({ lb, charts, reads }: RouteDeps): Hono<Env> {
  const app = new Hono<Env>();
  const limits = lb.options.limits;
  const maxMb = Math.round(limits.maxBodyBytes / (1 << 20));
  const compares = new RateLimiter(COMPARES_PER_MINUTE, 60_000);
  const withQuotaHeaders = (c: Context<Env>, answer: UploadAnswer, replayed: boolean) => {
    if (answer.quota) {
      c.header('X-Quota-Limit', String(answer.quota.limit));
      c.header('X-Quota-Remaining', String(answer.quota.remaining));
    }
    if (replayed) c.header('Idempotent-Replayed', 'true');
  };

  // An upload is authenticated and admitted (rate, quota) from its headers alone, before its body is read.
  app.post('/api/submissions', async (c) => {
    const who = await lb.uploads.authenticate(c.req.header('authorization'), c.get('address'));
    // A retry of an upload that landed gets its first answer, whatever the rate or the quota say now.
    const key = c.req.header('idempotency-key');
    const seen = await lb.uploads.replay(who, key);
    if (seen) {
      withQuotaHeaders(c, seen, true);
      return c.json(seen, 200);
    }
    const quota = await lb.uploads.admit(who);
    const { files, metadata } = await readUploadForm(c, limits);
    const { status, body, replayed } = await lb.uploads.submit({
      files,
      metadata: parseMetadata(metadata, who),
      who,
      admitted: { quota },
      ...(key !== undefined ? { idempotencyKey: key } : {}),
    });
    withQuotaHeaders(c, body, replayed);
    if (status === 201) c.header('Location', `/api/submissions/${body.id}`);
    return c.json(body, status);
  });

  app.get('/api/submissions/:id', async (c) => c.json(publicEntry(await lb.boards.entry(c.req.param('id')))));

  app.get('/submit', (c) => render(c, <UploadPage ctx={c.get('ctx')} maxMb={maxMb} />));
  // The browser's form carries its CSRF token as the body's first part (the form's first field, and browsers send
  // fields in the form's order): it is checked there, and only then is the uploader admitted (rate, quota) and the
  // rest read. A forged post costs its uploader nothing, and the token stays out of the address bar and history.
  app.post('/submit', async (c) => {
    const ctx = c.get('ctx');
    const who = await lb.uploads.authenticate(undefined, c.get('address'));
    let quota: Quota | null = null;
    const { files, metadata: meta } = await readUploadForm(c, limits, {
      name: '_csrf',
      check: async (token) => {
        checkCsrf(c, { _csrf: token });
        quota = await lb.uploads.admit(who);
      },
    });
    const { status, body } = await lb.uploads.submit({
      files,
      metadata: parseMetadata(meta, who),
      who,
      admitted: { quota },
    });
    if (status === 201 || (status === 200 && body.status === 'scored')) {
      return c.redirect(`/submissions/${body.id}?lang=${ctx.lang}`, 303);
    }
    return render(
      c,
      <UploadPage ctx={ctx} maxMb={maxMb} answer={body} values={meta} />,
      status === 202 ? 200 : 422,
    );
  });

  // Pages that draw charts count as reads of the boards (an uncached entry page is seconds of drawing).
  app.get('/submissions/:id', async (c) => {
    limitReads(c, reads);
    const ctx = c.get('ctx');
    const e = await lb.boards.entry(c.req.param('id'), { admin: ctx.admin });
    const blocks = await charts.draw(entryCharts(e, ctx.r));
    const others = e.status === 'scored' ? (await lb.boards.board(e.board)).filter((o) => o.id !== e.id) : [];
    return render(c, <SubmissionPage ctx={ctx} e={e} charts={blocks} others={others} />);
  });

  app.get('/compare', async (c) => {
    limitReads(c, reads);
    const ctx = c.get('ctx');
    const a = c.req.query('a');
    const b = c.req.query('b');
    if (!a || !b) throw new HttpError(400, 'BAD_REQUEST', 'compare needs ?a=ID&b=ID');
    if (!lb.boards.hasComparison(a, b)) limitAddress(c, compares, 'new comparisons');
    const r = await lb.boards.compare(a, b);
    const blocks = r.comparison ? await charts.draw(comparisonCharts(r.comparison, r.b, ctx.r)) : [];
    return render(c, <ComparePage ctx={ctx} a={r.a} b={r.b} comparison={r.comparison} charts={blocks} />);
  });
  return app;
}
