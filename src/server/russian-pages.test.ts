/**
 * Russian pages are Russian (docs/leaderboard.md: every word of a page in Russian): each page type, its error pages
 * included, rendered with `?lang=ru`, has no Latin-script word outside an allow-list of names (models, tasks, the
 * paper's authors, formats and units), and shows dates and numbers as the Russian locale writes them. An upload's
 * problems and an entry's contamination probes are said in Russian too, their codes and values kept as code.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NO_DATA_REASON } from '../../test/helpers/data.js';
import { attr, byId, type Element, elements, parseHtml, textOf } from '../../test/helpers/html.js';
import { ALLOWED, latinWords } from '../../test/helpers/latin-words.js';
import { ADMIN, ROUTES_READY, ref, useLeaderboardApp } from '../../test/helpers/leaderboard-app.js';

describe('the Russian words', () => {
  it('name the board one way: доска, never лидерборд', () => {
    const texts = ['server/i18n.ts', 'report/i18n.ts'].map((f) =>
      readFileSync(join(import.meta.dirname, '..', f), 'utf8'),
    );
    expect(texts.filter((t) => /лидерборд/i.test(t))).toEqual([]);
  });
});

describe.skipIf(!ROUTES_READY)(`Russian pages (${ROUTES_READY ? 'data found' : NO_DATA_REASON})`, () => {
  const t = useLeaderboardApp('sqlite');
  const { request } = t;

  it('says every error in Russian: a missing page, a missing submission, a bad sort', async () => {
    const pages = {
      missing: await request('/no/such/page?lang=ru'),
      submission: await request('/submissions/00000000-0000-4000-8000-000000000000?lang=ru'),
      sort: await request('/?sort=bogus&lang=ru'),
    };
    expect(Object.values(pages).map((r) => r.status)).toEqual([404, 404, 400]);
    const words: Record<string, string[]> = {};
    for (const [k, r] of Object.entries(pages)) words[k] = latinWords(await r.text(), ALLOWED);
    expect(words).toEqual({ missing: [], submission: [], sort: [] });
  });

  it('writes the board, an entry and the upload form in Russian, models aside', async () => {
    const { token } = await t.lb.admin.createToken('lab');
    const up = await t.upload(
      [{ name: 'RuMedDaNet.jsonl', data: readFileSync(join(ref('bilstm'), 'RuMedDaNet.jsonl')) }],
      { model: 'my-model', kind: 'LLM' },
      { authorization: `Bearer ${token}` },
    );
    expect(up.res.status).toBe(201);
    const allowed = new Set([...ALLOWED, 'my-model', 'lab']);
    const words: Record<string, string[]> = {};
    for (const path of [
      '/?lang=ru',
      `/submissions/${up.body.id}?lang=ru`,
      '/submit?lang=ru',
      '/board/closed?lang=ru',
    ])
      words[path] = latinWords(await (await request(path)).text(), allowed);
    expect(words).toEqual({
      '/?lang=ru': [],
      [`/submissions/${up.body.id}?lang=ru`]: [],
      '/submit?lang=ru': [],
      '/board/closed?lang=ru': [],
    });
  });

  it("says an upload's problems and an entry's probes in Russian, codes and values as code", async () => {
    // The web form: its CSRF token first, then a RuMedDaNet file with a foreign id, a label outside the task's, a
    // line that is no JSON, 30 items left out (more than a page lists of one code), and a file named after no task.
    const formPage = await request('/submit?lang=ru');
    const cookie = (formPage.headers.get('set-cookie') ?? '').split(';')[0] as string;
    const formHtml = await formPage.text();
    const csrf = attr(
      elements(
        parseHtml(formHtml),
        (e) => e.tagName === 'input' && attr(e, 'name') === '_csrf',
      )[0] as Element,
      'value',
    ) as string;
    const lines = readFileSync(join(ref('bilstm'), 'RuMedDaNet.jsonl'), 'utf8')
      .trim()
      .split('\n');
    const bad = [
      '{"pairID": "not-an-item", "prediction": "да"}',
      lines[0]?.replace(/"prediction": "[^"]*"/, '"prediction": "может быть"'),
      '{"pairID": ',
      ...lines.slice(31),
    ].join('\n');
    const fd = new FormData();
    fd.append('_csrf', csrf);
    fd.append('file', new Blob([bad]), 'RuMedDaNet.jsonl');
    fd.append('file', new Blob(['{}\n']), 'RuMedFoo.jsonl');
    fd.append('model', 'my-model');
    fd.append('kind', 'LLM');
    const rejected = await request('/submit?lang=ru', { method: 'POST', body: fd, headers: { cookie } });
    const rejectedHtml = await rejected.text();
    const problems = byId(parseHtml(rejectedHtml), 'upload-errors');
    const codes = problems ? elements(problems, (e) => e.tagName === 'code').map((e) => textOf(e)) : [];
    // Each kind of problem says its meaning in Russian, its code kept (the omitted MISSING_ITEM counted apart).
    expect([rejected.status, codes.filter((c) => /^[A-Z_]+$/.test(c)).sort()]).toEqual([
      422,
      [
        'MALFORMED_JSON',
        'MISSING_ITEM',
        'MISSING_ITEM',
        'MISSING_TASK',
        'UNKNOWN_ID',
        'UNKNOWN_LABEL',
        'UNKNOWN_TASK_FILE',
      ],
    ]);
    expect(textOf(problems as Element)).toContain('нет предсказания для примера набора');

    // An entry whose upload sent its trust files' summary: the three probes and the formulations' spread.
    const probe = (p: number) => ({
      n: 60,
      p_value: p,
      alpha: 0.01,
      verdict: p < 0.01 ? 'contaminated' : 'no evidence',
    });
    const up = await t.upload(
      [{ name: 'RuMedDaNet.jsonl', data: readFileSync(join(ref('bilstm'), 'RuMedDaNet.jsonl')) }],
      {
        model: 'probed-model',
        kind: 'LLM',
        trust: JSON.stringify({
          contamination: { RuMedDaNet: { order: probe(0.001), guided: probe(0.4), options: probe(0.9) } },
          formulations: { RuMedDaNet: { variants: 5, mean: 60, sd: 2, min: 57, max: 63 } },
        }),
      },
    );
    expect(up.res.status).toBe(201);
    const entryHtml = await (await request(`/submissions/${up.body.id}?lang=ru`)).text();
    expect(entryHtml).toContain('порядок <code>order</code>: n 60, p 0.0010 (α 0.01) — есть признаки утечки');

    const allowed = new Set([...ALLOWED, 'my-model', 'probed-model']);
    expect({
      upload: latinWords(rejectedHtml, allowed),
      entry: latinWords(entryHtml, allowed),
    }).toEqual({ upload: [], entry: [] });
  });

  it('writes the admin, campaign, runs and compare pages in Russian, models aside', async () => {
    const csrfOf = (html: string) =>
      attr(
        elements(parseHtml(html), (e) => e.tagName === 'input' && attr(e, 'name') === '_csrf')[0] as Element,
        'value',
      ) as string;
    const loginPage = await request('/admin/login?lang=ru');
    const nonce = (loginPage.headers.get('set-cookie') ?? '').split(';')[0] as string;
    const loginHtml = await loginPage.text();
    const signed = await request('/admin/login?lang=ru', {
      method: 'POST',
      body: new URLSearchParams({ _csrf: csrfOf(loginHtml), token: ADMIN }),
      headers: { cookie: nonce },
    });
    expect(signed.status).toBe(303);
    const cookie = `${nonce}; ${(signed.headers.get('set-cookie') ?? '').split(';')[0]}`;
    const asAdmin = async (path: string, body?: Record<string, string>) =>
      request(path, {
        headers: { cookie },
        ...(body ? { method: 'POST', body: new URLSearchParams(body) } : {}),
      });
    const csrf = csrfOf(await (await asAdmin('/admin?lang=ru')).text());
    const { token } = await t.lb.admin.createToken('lab2');
    const ids: string[] = [];
    for (const [model, dir] of [
      ['model-a', 'bilstm'],
      ['model-b', 'linear_models'],
    ] as const) {
      const up = await t.upload(
        [{ name: 'RuMedDaNet.jsonl', data: readFileSync(join(ref(dir), 'RuMedDaNet.jsonl')) }],
        { model, kind: 'LLM' },
        { authorization: `Bearer ${token}` },
      );
      expect(up.res.status).toBe(201);
      ids.push(up.body.id as string);
    }
    const created = await asAdmin('/admin/campaigns?lang=ru', {
      _csrf: csrf,
      task_split: 'RuMedDaNet/test',
      annotators: '2',
      overlap: '2',
      items: '4',
      seed: '0',
      base_url: 'https://annotate.example.org',
    });
    const createdHtml = await created.text();
    const campaign = /\/admin\/campaigns\/([0-9a-f-]{36})/.exec(createdHtml)?.[1] as string;
    const link = /\/annotate\/(rmb_[\w-]+)/.exec(createdHtml)?.[1] as string;
    expect([created.status, campaign?.length, (link ?? '').length > 0]).toEqual([200, 36, true]);
    // (my-model, lab and probed-model: the entries of the tests above, on the admin's list too)
    const allowed = new Set([...ALLOWED, 'model-a', 'model-b', 'lab2', 'my-model', 'lab', 'probed-model']);
    const pages: Record<string, string> = {
      login: loginHtml,
      created: createdHtml,
    };
    for (const path of [
      '/admin?lang=ru',
      `/admin/submissions/${ids[0]}?lang=ru`,
      '/admin/campaigns?lang=ru',
      `/admin/campaigns/${campaign}?lang=ru`,
      `/annotate/${link}?lang=ru`,
      '/runs?lang=ru',
      `/compare?a=${ids[0]}&b=${ids[1]}&lang=ru`,
    ])
      pages[path] = await (await asAdmin(path)).text();
    const words = Object.fromEntries(
      Object.entries(pages).map(([k, html]) => [k, latinWords(html, allowed)]),
    );
    expect(words).toEqual(Object.fromEntries(Object.keys(pages).map((k) => [k, []])));
  });
});
