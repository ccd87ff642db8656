/**
 * The boards' routes, in process, on SQLite and PostgreSQL: the public board with the paper's rows under a strict
 * Content-Security-Policy, every user string escaped on the pages, the CSV export guarded against formulas.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NO_DATA_REASON } from '../../../test/helpers/data.js';
import { ENGINES } from '../../../test/helpers/engines.js';
import { attr, elements, parseHtml, textOf } from '../../../test/helpers/html.js';
import { ROUTES_READY, ref, useLeaderboardApp } from '../../../test/helpers/leaderboard-app.js';

describe.skipIf(!ROUTES_READY)(`board routes (${ROUTES_READY ? 'data found' : NO_DATA_REASON})`, () => {
  describe.each(ENGINES)('on %s', (engine) => {
    const t = useLeaderboardApp(engine);
    const { request, upload } = t;

    it('serves the public board with the paper’s rows, under a strict Content-Security-Policy', async () => {
      const res = await request('/');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-security-policy')).toBe(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
      );
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      const doc = parseHtml(await res.text());
      const rows = elements(doc, (e) => e.tagName === 'tr' && attr(e, 'class') === 'reference');
      expect(rows.map((r) => textOf(r).split(' ')[0])).toEqual([
        'RuPoolBERT',
        'Human',
        'RuBERT',
        'Feature-based',
        'BiLSTM',
        'Naive',
      ]);
      expect(elements(doc, (e) => e.tagName === 'script').map((s) => attr(s, 'src'))).toEqual([
        '/static/app.js',
      ]);
      expect((await request('/static/style.css')).headers.get('content-type')).toBe(
        'text/css; charset=utf-8',
      );
    });

    it('escapes every user string on the pages and guards the CSV export', async () => {
      const hostile = {
        model: '<script>alert(1)</script>',
        description: '"><img src=x onerror=alert(2)>',
        link: 'https://example.org/"><script>alert(3)</script>',
        kind: 'LLM',
      };
      // A team name comes from its token, so the hostile team is the admin's typo, not an uploader's field.
      const { token } = await t.lb.admin.createToken('=HYPERLINK("http://evil.example")');
      const auth = { authorization: `Bearer ${token}` };
      const f = [{ name: 'RuMedDaNet.jsonl', data: readFileSync(join(ref('naive'), 'RuMedDaNet.jsonl')) }];
      const { body } = await upload(f, hostile, auth);
      // The naive file answers 18 items the split no longer has: rejected, so upload a valid one.
      expect(body.status).toBe('rejected');
      const good = await upload(
        [{ name: 'RuMedDaNet.jsonl', data: readFileSync(join(ref('bilstm'), 'RuMedDaNet.jsonl')) }],
        hostile,
        auth,
      );
      expect(good.res.status).toBe(201);
      for (const path of [`/submissions/${good.body.id}`, '/']) {
        const doc = parseHtml(await (await request(path)).text());
        expect(elements(doc, (e) => e.tagName === 'script').map((s) => attr(s, 'src'))).toEqual([
          '/static/app.js',
        ]);
        expect(elements(doc, (e) => e.tagName === 'img')).toEqual([]);
        expect(textOf(doc)).toContain('<script>alert(1)</script>');
      }
      const doc = parseHtml(await (await request(`/submissions/${good.body.id}`)).text());
      expect(
        elements(doc, (e) => e.tagName === 'a' && textOf(e) === hostile.link).map((a) => attr(a, 'href')),
      ).toEqual([hostile.link]);
      const csv = await (await request('/board/public.csv')).text();
      expect(csv).toContain(`"'=HYPERLINK(""http://evil.example"")"`);
      expect(csv.split('\r\n')[0]).toBe(
        'rank,id,model,team,kind,params,open_weights,verified,submitted,RuMedTop3.accuracy,RuMedTop3.hit_at_3,RuMedSymptomRec.accuracy,RuMedSymptomRec.hit_at_3,RuMedDaNet.accuracy,RuMedNLI.accuracy,RuMedNER.accuracy,RuMedNER.f1,RuMedTop3.score,RuMedSymptomRec.score,RuMedDaNet.score,RuMedNLI.score,RuMedNER.score,overall,overall.rank_ci,overall.group,cost_usd,prompt_tokens,completion_tokens,reasoning_tokens,batch',
      );
    });
  });
});
