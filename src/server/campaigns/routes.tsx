/**
 * Routes of human evaluation campaigns: the admin's (signed-in session and CSRF token, as every admin form) and the
 * annotator's (the invitation token in the link is the only credential; it sees only that annotator's items).
 */

import { Hono } from 'hono';
import { z } from 'zod';
import { nestsDeeperThan } from '../../data/jsonl.js';
import { HttpError } from '../errors.js';
import { checkCsrf, type Env, render, requireAdmin } from '../http.js';
import type { Campaigns } from './service.js';
import { AnnotateClosedPage, AnnotatePage, CampaignPage, CampaignsPage, InvitationsPage } from './views.js';

const form = async (c: { req: { parseBody: () => Promise<Record<string, unknown>> } }) =>
  (await c.req.parseBody()) as Record<string, string>;

const whole = (name: string, min: number) =>
  z.coerce
    .number({ error: `${name}: a whole number` })
    .int(`${name}: a whole number`)
    .min(min, `${name}: at least ${min}`);

/** The admin's form for a new campaign, checked at the edge (the service checks what needs the data). */
const campaignForm = z.object({
  task_split: z
    .string()
    .default('')
    .transform((v) => {
      const [task = '', split = ''] = v.split('/');
      return { task, split: split as 'test' | 'private_test' };
    }),
  // "все" is the Russian form's word for every item.
  items: z
    .union([z.literal('all'), z.literal('все').transform((): 'all' => 'all'), whole('items', 1)])
    .default('all'),
  overlap: whole('overlap', 1),
  annotators: whole('annotators', 1),
  seed: whole('seed', 0).default(0),
  base_url: z
    .string({ error: 'the address for the links must be an http:// or https:// URL' })
    .default('')
    .transform((v, ctx) => {
      try {
        const u = new URL(v);
        if (u.protocol === 'http:' || u.protocol === 'https:') return u;
      } catch {
        // Refused below.
      }
      ctx.addIssue({
        code: 'custom',
        message: 'the address for the links must be an http:// or https:// URL',
      });
      return z.NEVER;
    }),
  name: z.string().max(200, 'name: at most 200 characters').optional(),
  guidelines: z.string().max(20_000, 'guidelines: at most 20,000 characters').optional(),
});

/** An annotator's answer, as the page sends it. */
const answerBody = z.object({
  item_id: z.string({ error: 'not one of your items' }).max(200, 'not one of your items'),
  answer: z.unknown().optional(),
  skipped: z.boolean().default(false),
  // A missing or unreadable time counts as none: the answer still counts.
  time_ms: z
    .unknown()
    .optional()
    .transform((v) =>
      typeof v === 'number' && Number.isFinite(v) ? Math.max(0, Math.min(Math.round(v), 86_400_000)) : 0,
    ),
});

function parseForm<S extends z.ZodType>(schema: S, body: Record<string, string>): z.output<S> {
  const r = schema.safeParse(body);
  if (r.success) return r.data;
  throw new HttpError(400, 'BAD_CAMPAIGN', r.error.issues.map((i) => i.message).join('; '));
}

export function campaignRoutes(campaigns: Campaigns): Hono<Env> {
  const r = new Hono<Env>();

  r.get('/admin/campaigns', async (c) => {
    const ctx = c.get('ctx');
    if (!ctx.admin) return c.redirect(`/admin/login?lang=${ctx.lang}`, 303);
    return render(
      c,
      <CampaignsPage ctx={ctx} campaigns={await campaigns.list()} origin={new URL(c.req.url).origin} />,
    );
  });

  r.post('/admin/campaigns', async (c) => {
    requireAdmin(c);
    const body = await form(c);
    checkCsrf(c, body);
    const f = parseForm(campaignForm, body);
    // A campaign left unnamed is named in the form's language ("RuMedDaNet, тестовый, 2026-12-07"): it is shown so.
    const ctx = c.get('ctx');
    const name =
      f.name ||
      `${f.task_split.task}, ${ctx.r.splitName(f.task_split.split)}, ${new Date().toISOString().slice(0, 10)}`;
    const { campaign, invitations } = await campaigns.create({
      task: f.task_split.task,
      split: f.task_split.split,
      items: f.items,
      overlap: f.overlap,
      annotators: f.annotators,
      seed: f.seed,
      name,
      ...(f.guidelines ? { guidelines: f.guidelines } : {}),
    });
    const base = f.base_url;
    const links = invitations.map((i) => ({ ...i, url: new URL(`/annotate/${i.token}`, base).toString() }));
    return render(c, <InvitationsPage ctx={c.get('ctx')} campaign={campaign} links={links} />);
  });

  r.get('/admin/campaigns/:id', async (c) => {
    requireAdmin(c);
    return render(c, <CampaignPage ctx={c.get('ctx')} d={await campaigns.detail(c.req.param('id'))} />);
  });

  r.get('/admin/campaigns/:id/answers.jsonl', async (c) => {
    requireAdmin(c);
    const id = c.req.param('id');
    const text = await campaigns.export(id);
    c.header('Content-Type', 'application/x-ndjson; charset=utf-8');
    c.header('Content-Disposition', `attachment; filename="campaign-${id}.jsonl"`);
    return c.body(text);
  });

  r.post('/admin/campaigns/:id/annotators/:annotator/revoke', async (c) => {
    requireAdmin(c);
    checkCsrf(c, await form(c));
    await campaigns.revoke(c.req.param('id'), c.req.param('annotator'));
    return c.redirect(`/admin/campaigns/${c.req.param('id')}`, 303);
  });

  r.post('/admin/campaigns/:id/:action{close|reopen|publish|guidelines}', async (c) => {
    requireAdmin(c);
    const body = await form(c);
    checkCsrf(c, body);
    const id = c.req.param('id');
    const action = c.req.param('action');
    let notice: string | undefined;
    if (action === 'close' || action === 'reopen')
      await campaigns.setStatus(id, action === 'close' ? 'closed' : 'open');
    else if (action === 'guidelines') await campaigns.setGuidelines(id, body.guidelines ?? '');
    else {
      try {
        const sid = await campaigns.publish(id);
        notice = c.get('ctx').t.campaigns.publishedNotice(sid);
      } catch (e) {
        if (!(e instanceof HttpError)) throw e;
        notice = c.get('ctx').t.campaigns.notPublished(e.message);
      }
    }
    if (notice)
      return render(c, <CampaignPage ctx={c.get('ctx')} d={await campaigns.detail(id)} notice={notice} />);
    return c.redirect(`/admin/campaigns/${id}`, 303);
  });

  // The annotator's side.

  r.get('/annotate/:token', async (c) => {
    try {
      const view = await campaigns.view(c.req.param('token'));
      return render(c, <AnnotatePage view={view} token={c.req.param('token')} />);
    } catch (e) {
      if (!(e instanceof HttpError)) throw e;
      const message =
        e.code === 'CAMPAIGN_CLOSED'
          ? 'Разметка в этой кампании завершена. Спасибо за работу!'
          : 'Ссылка недействительна: её отозвали или в ней ошибка. Обратитесь к организатору.';
      return render(c, <AnnotateClosedPage message={message} />, e.status);
    }
  });

  r.get('/api/annotate/:token', async (c) => c.json(await campaigns.view(c.req.param('token'))));

  r.post('/api/annotate/:token/answers', async (c) => {
    // JSON only: a cross-site form cannot send it without a CORS preflight, which this server never grants.
    if (!/^application\/json\b/i.test(c.req.header('content-type') ?? '')) {
      throw new HttpError(415, 'UNSUPPORTED_MEDIA_TYPE', 'send the answer as application/json');
    }
    // The link first: a body from an unknown or revoked link is never parsed (it was capped by the app already).
    const session = await campaigns.session(c.req.param('token'));
    const text = await c.req.text();
    let body: unknown;
    try {
      // An answer is a label, a list or a tag per token: a few levels; deeper is refused before parsing.
      if (nestsDeeperThan(text, 8)) throw new Error('too deep');
      body = JSON.parse(text);
    } catch {
      throw new HttpError(400, 'BAD_ANSWER', 'the body is not JSON');
    }
    const parsed = answerBody.safeParse(body);
    if (!parsed.success) {
      const i = parsed.error.issues[0];
      throw new HttpError(400, 'BAD_ANSWER', `${i?.path.join('.') || 'body'}: ${i?.message ?? 'invalid'}`);
    }
    await campaigns.answer(session, parsed.data);
    return c.json({ ok: true });
  });

  return r;
}
