/**
 * Routes of human evaluation campaigns: the admin's (signed-in session and CSRF token, as every admin form) and the
 * annotator's (the invitation token in the link is the only credential; it sees only that annotator's items).
 */
import { Hono } from 'hono';
import { HttpError } from '../errors.js';
import { checkCsrf, type Env, render, requireAdmin } from '../http.js';
import {
  AnnotateClosedPage,
  AnnotatePage,
  CampaignPage,
  CampaignsPage,
  InvitationsPage,
} from '../views/campaigns.js';
import type { Campaigns } from './service.js';

const form = async (c: { req: { parseBody: () => Promise<Record<string, unknown>> } }) =>
  (await c.req.parseBody()) as Record<string, string>;

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
    const [task = '', split = ''] = (body.task_split ?? '').split('/');
    const int = (name: string, v: string | undefined): number => {
      const n = Number(v);
      if (!Number.isInteger(n)) throw new HttpError(400, 'BAD_CAMPAIGN', `${name}: a whole number`);
      return n;
    };
    let base: URL;
    try {
      base = new URL(body.base_url ?? '');
      if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new Error('scheme');
    } catch {
      throw new HttpError(
        400,
        'BAD_CAMPAIGN',
        'the address for the links must be an http:// or https:// URL',
      );
    }
    const { campaign, invitations } = await campaigns.create({
      task,
      split: split as 'test' | 'private_test',
      items: body.items === 'all' ? 'all' : int('items', body.items),
      overlap: int('overlap', body.overlap),
      annotators: int('annotators', body.annotators),
      seed: int('seed', body.seed),
      ...(body.name ? { name: body.name } : {}),
      ...(body.guidelines ? { guidelines: body.guidelines } : {}),
    });
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
        notice = `Published: the human row is submission ${sid}.`;
      } catch (e) {
        if (!(e instanceof HttpError)) throw e;
        notice = `Not published: ${e.message}`;
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
    // The body was capped (64 KiB) before it was read, by the app's body limit.
    const text = await c.req.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new HttpError(400, 'BAD_ANSWER', 'the body is not JSON');
    }
    await campaigns.answer(c.req.param('token'), body);
    return c.json({ ok: true });
  });

  return r;
}
