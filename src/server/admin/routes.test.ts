/**
 * The admin's routes, in process, on SQLite and PostgreSQL: only the signed-in admin (a session bound to CSRF
 * tokens and the origin) hides, flags, verifies, edits and deletes, scripts do the same with the bearer token,
 * everything is in the audit log; a weak admin secret is refused.
 */

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENGINES } from '../../../test/helpers/engines.js';
import { fixtureDataDir, writeFixturePredictions } from '../../../test/helpers/fixture-data.js';
import { attr, type Element, elements, parseHtml, textOf } from '../../../test/helpers/html.js';
import { ADMIN, type Body, files, useLeaderboardApp } from '../../../test/helpers/leaderboard-app.js';

/** The suite's data and upload: a small folder and predictions the tests write, not ../shared. */
const DATA = fixtureDataDir();
const PREDICTIONS = writeFixturePredictions(DATA, mkdtempSync(join(tmpdir(), 'rumedbench-admin-p-')));

describe('admin routes (on fixture data the test writes)', () => {
  describe.each(ENGINES)('on %s', (engine) => {
    const t = useLeaderboardApp(engine, DATA);
    const { request, upload } = t;

    it('lets only the signed-in admin hide, flag, verify, edit and delete, with CSRF tokens, and logs it all', async () => {
      const { body } = await upload(files(PREDICTIONS), { model: 'to moderate', kind: 'encoder' });
      const id = body.id as string;
      expect((await request('/admin')).status).toBe(303);
      // The sign-in form carries a CSRF token bound to the browser's cookie.
      const loginPage = await request('/admin/login');
      const cookie = (loginPage.headers.get('set-cookie') ?? '').split(';')[0] as string;
      let csrf = attr(
        elements(
          parseHtml(await loginPage.text()),
          (e) => e.tagName === 'input' && attr(e, 'name') === '_csrf',
        )[0] as Element,
        'value',
      ) as string;
      const post = (path: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
        request(path, { method: 'POST', body: new URLSearchParams(fields), headers: { cookie, ...headers } });
      expect((await post('/admin/login', { _csrf: csrf, token: 'wrong' })).status).toBe(403);
      expect((await post('/admin/login', { token: ADMIN })).status).toBe(403); // no CSRF token
      const signedIn = await post('/admin/login', { _csrf: csrf, token: ADMIN });
      expect(signedIn.status).toBe(303);
      const session = (signedIn.headers.get('set-cookie') ?? '').split(';')[0] as string;
      expect(session.startsWith('rmb_admin=')).toBe(true);
      const asAdmin = (path: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
        post(path, fields, { cookie: `${cookie}; ${session}`, ...headers });
      // The sign-in page's token dies with the anonymous state: forms now carry one bound to the session.
      expect((await asAdmin(`/admin/submissions/${id}/hide`, { _csrf: csrf })).status).toBe(403);
      csrf = attr(
        elements(
          parseHtml(await (await request('/admin', { headers: { cookie: `${cookie}; ${session}` } })).text()),
          (e) => e.tagName === 'input' && attr(e, 'name') === '_csrf',
        )[0] as Element,
        'value',
      ) as string;

      expect((await asAdmin(`/admin/submissions/${id}/hide`, {})).status).toBe(403);
      expect(
        (await asAdmin(`/admin/submissions/${id}/hide`, { _csrf: csrf }, { origin: 'http://evil.example' }))
          .status,
      ).toBe(403);
      expect((await post(`/admin/submissions/${id}/hide`, { _csrf: csrf })).status).toBe(401); // not signed in
      expect((await asAdmin(`/admin/submissions/${id}/hide`, { _csrf: csrf })).status).toBe(303);
      const board = (await (await request('/api/boards/public')).json()) as { entries: { id: string }[] };
      expect(board.entries.map((e) => e.id)).not.toContain(id);
      expect((await request(`/submissions/${id}`)).status).toBe(404);
      expect((await request(`/submissions/${id}`, { headers: { cookie: session } })).status).toBe(200);
      for (const action of ['unhide', 'flag', 'verify']) {
        expect((await asAdmin(`/admin/submissions/${id}/${action}`, { _csrf: csrf })).status).toBe(303);
      }
      const edited = await asAdmin(`/admin/submissions/${id}/edit`, {
        _csrf: csrf,
        model: 'BiLSTM (edited)',
        kind: 'encoder',
        link: 'https://example.org/paper',
      });
      expect(edited.status).toBe(303);
      const entry = (await (await request(`/api/submissions/${id}`)).json()) as Body;
      expect([entry.model, entry.flagged, entry.verified, entry.link]).toEqual([
        'BiLSTM (edited)',
        true,
        true,
        'https://example.org/paper',
      ]);
      const adminPage = await (await request('/admin', { headers: { cookie: session } })).text();
      expect(adminPage).toContain('BiLSTM (edited)');
      // In Russian the state, the board and the actions are Russian words too, not the database's English.
      const ru = parseHtml(await (await request('/admin?lang=ru', { headers: { cookie: session } })).text());
      const row = elements(ru, (e) => e.tagName === 'tr' && attr(e, 'data-id') === id)[0] as Element;
      const rowText = elements(row, (e) => e.tagName === 'td')
        .map((td) => textOf(td))
        .join(' | ');
      expect(rowText).toMatch(/оценено · под вопросом · проверено/);
      expect(rowText).toContain('открытая');
      expect(rowText).not.toMatch(/\b(scored|public|hide|unflag|unverify|delete)\b/);
      expect(elements(row, (e) => e.tagName === 'button').map((b) => textOf(b).trim())).toEqual([
        'скрыть',
        'снять пометку',
        'снять подтверждение',
        'удалить',
      ]);
      // The audit log too: its actions and actors in Russian, the database's code kept beside each action.
      const logRows = elements(
        elements(ru, (e) => e.tagName === 'table' && attr(e, 'class') === 'audit')[0] as Element,
        (e) => e.tagName === 'tr',
      ).map((tr) => elements(tr, (e) => e.tagName === 'td').map((td) => textOf(td)));
      const cells = (action: string) =>
        logRows.find((r) => r[2] === action && r[3] === id)?.slice(1, 3) ?? [];
      expect(cells('изменено')).toEqual(['администратор', 'изменено']);
      expect(cells('помечено')).toEqual(['администратор', 'помечено']);
      expect(logRows.find((r) => r[3] === id && r[2] === 'загрузка')?.[1]).toMatch(/^(токен|адрес) /);
      expect(logRows.some((r) => r[1] === 'администратор' && r[2] === 'вход')).toBe(true);
      expect(logRows.flatMap((r) => r.slice(1, 3)).join(' ')).not.toMatch(
        /\b(admin|upload|edit|hide|flag|verify|sign-in)\b/,
      );
      const api = await request(`/api/admin/submissions/${id}/delete`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}` },
      });
      expect(api.status).toBe(200);
      expect((await request(`/api/submissions/${id}`)).status).toBe(404);
      const { listAudit } = await import('./queries.js');
      const actions = (await listAudit(t.lb.db.db))
        .filter((a) => a.submission_id === id)
        .map((a) => a.action);
      expect(actions.reverse()).toEqual(['upload', 'hide', 'unhide', 'flag', 'verify', 'edit', 'delete']);
      expect((await request(`/api/admin/submissions/${id}/hide`, { method: 'POST' })).status).toBe(401);
    });

    it('refuses a weak admin secret', async () => {
      for (const weak of ['admin', 'changeme-changeme-changeme', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa']) {
        await expect(t.lb.admin.ensureAdminSecret(weak)).rejects.toThrow(/the admin secret is refused/);
      }
    });
  });
});
