/**
 * Runs of the platform: `/runs` and `/runs/ID` for everyone (progress and status; workers and failed requests for
 * the admin), queueing an evaluation of a registered model (the admin, by form or API; a team by API, held for
 * approval), and approving a team's request. No page shows a test item or a model's reply.
 */
import type { Context } from 'hono';
import { Hono } from 'hono';
import { HttpError } from '../errors.js';
import { type Env, render, requireAdmin } from '../http.js';
import type { Leaderboard } from '../leaderboard.js';
import { readSmallForm } from '../middleware/forms.js';
import { RateLimiter } from '../rate-limit.js';
import { REASON_TEXT, reasonOf } from './reasons.js';
import { RUNS_PAGE, type Runs } from './service.js';
import { RunPage, RunsPage } from './views.js';

async function jsonBody(c: Context<Env>): Promise<Record<string, unknown>> {
  let body: unknown;
  try {
    body = await c.req.json();
  } catch (e) {
    throw new HttpError(400, 'BAD_JSON', `the body must be JSON: ${(e as Error).message}`);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new HttpError(
      400,
      'BAD_JSON',
      'the body must be a JSON object: {"endpoint": NAME, "boards": "closed"}',
    );
  return body as Record<string, unknown>;
}

async function requireAdminToken(c: Context<Env>, lb: Leaderboard): Promise<void> {
  await lb.admin.requireBearer(c.get('address'), c.req.header('authorization'));
}

/** Evaluation requests a team token may make an hour: each costs the platform a model's whole test run. */
const EVALUATION_REQUESTS_PER_HOUR = 10;

export function runRoutes(runs: Runs, lb: Leaderboard): Hono<Env> {
  const app = new Hono<Env>();
  const publicReason = (text: string | null | undefined) => (text ? REASON_TEXT[reasonOf(text)] : null);
  const requests = new RateLimiter(EVALUATION_REQUESTS_PER_HOUR, 3600_000);

  app.get('/runs', async (c) => {
    const ctx = c.get('ctx');
    if (!runs.queue) return render(c, <RunsPage ctx={ctx} runs={undefined} endpoints={[]} />);
    const [list, endpoints] = await Promise.all([
      runs.list(c.req.query('before')),
      ctx.admin ? runs.endpoints() : Promise.resolve([]),
    ]);
    const older = list.length === RUNS_PAGE ? list.at(-1)?.created_at : undefined;
    return render(c, <RunsPage ctx={ctx} runs={list} endpoints={endpoints} {...(older ? { older } : {})} />);
  });
  app.get('/runs/:id', async (c) => {
    const ctx = c.get('ctx');
    const status = await runs.status(c.req.param('id'));
    const request = ctx.admin ? await runs.request(status.id) : undefined;
    return render(
      c,
      <RunPage ctx={ctx} run={status} entries={await runs.entries(status.id)} request={request} />,
    );
  });
  // A page of runs by time: `?before=` the created_at of the last one shown; `older` says where the next starts.
  app.get('/api/runs', async (c) => {
    const list = await runs.list(c.req.query('before'));
    return c.json({
      // A failure's class, never its text: that names the model server's address and what it answered.
      runs: list.map((r) => ({ ...r, error: publicReason(r.error) })),
      older: list.length === RUNS_PAGE ? (list.at(-1)?.created_at ?? null) : null,
    });
  });
  app.get('/api/runs/:id', async (c) => {
    const s = await runs.status(c.req.param('id'));
    // Workers and failure reasons are the admin's.
    return c.json({
      ...s,
      workers: [],
      cells: s.cells.map((cell) => ({ ...cell, error: publicReason(cell.error), failures: [] })),
    });
  });

  // The admin queues an evaluation: by form (session and CSRF token) or by API (the admin token).
  app.post('/admin/evaluations', async (c) => {
    requireAdmin(c);
    const form = await readSmallForm(c);
    const r = await runs.queueEvaluation({ endpoint: form.endpoint, boards: form.boards, by: 'admin' });
    return c.redirect(`/runs/${r.id}?lang=${c.get('ctx').lang}`, 303);
  });
  // A request held for approval is approved (its jobs queued) or rejected (cancelled), by form or by API.
  const decide = async (id: string, action: string): Promise<'queued' | 'cancelled'> => {
    const ok = action === 'approve' ? await runs.approve(id) : await runs.reject(id);
    if (!ok) throw new HttpError(409, 'NOT_PENDING', 'not waiting for approval');
    return action === 'approve' ? 'queued' : 'cancelled';
  };
  app.post('/admin/evaluations/:id/:action{approve|reject}', async (c) => {
    requireAdmin(c);
    await readSmallForm(c);
    await decide(c.req.param('id'), c.req.param('action'));
    return c.redirect(`/runs/${c.req.param('id')}?lang=${c.get('ctx').lang}`, 303);
  });
  app.post('/api/admin/evaluations', async (c) => {
    await requireAdminToken(c, lb);
    const body = await jsonBody(c);
    const r = await runs.queueEvaluation({ endpoint: body.endpoint, boards: body.boards, by: 'admin' });
    return c.json(r, 202);
  });
  app.post('/api/admin/evaluations/:id/:action{approve|reject}', async (c) => {
    await requireAdminToken(c, lb);
    const status = await decide(c.req.param('id'), c.req.param('action'));
    return c.json({ id: c.req.param('id'), status });
  });
  // A team asks for an evaluation of a registered model: held until the admin approves.
  app.post('/api/evaluations', async (c) => {
    const who = await lb.uploads.authenticate(c.req.header('authorization'), c.get('address'));
    if (who.tokenId === null)
      throw new HttpError(401, 'TOKEN_REQUIRED', 'a team token is needed: Authorization: Bearer <token>');
    const wait = requests.hit(who.tokenId);
    if (wait > 0)
      throw new HttpError(
        429,
        'RATE_LIMITED',
        `at most ${EVALUATION_REQUESTS_PER_HOUR} evaluation requests an hour from one token`,
        { retryAfter: wait },
      );
    const body = await jsonBody(c);
    const r = await runs.queueEvaluation({
      endpoint: body.endpoint,
      boards: body.boards,
      by: 'team',
      team: who.team ?? '',
    });
    return c.json(r, 202);
  });
  return app;
}
