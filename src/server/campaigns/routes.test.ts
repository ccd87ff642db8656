/**
 * Human evaluation campaigns through their routes, in process, on SQLite and PostgreSQL: the admin creates a
 * campaign, annotators answer through their own links (and nobody else's), the answers become a scored human row,
 * and the agreement figures are the ones the statistics module computes from the same answers.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES, freshDatabase } from '../../../test/helpers/engines.js';
import { FIXTURE_CODES, fixtureDataDir } from '../../../test/helpers/fixture-data.js';
import { attr, type Element, elements, parseHtml, textOf } from '../../../test/helpers/html.js';
import { runImportGold } from '../../cli/serve.js';
import { loadSplit } from '../../data/load.js';
import { createLogger } from '../../log.js';
import { cohenKappa } from '../../metrics/agreement.js';
import { getTask } from '../../tasks/registry.js';
import { createApp } from '../app.js';
import type { Leaderboard } from '../leaderboard.js';
import { openLeaderboard } from '../serve.js';

const ADMIN = 'campaign-admin-Secret-7Hq2mZ4pL8wX9';

/** The suite's data: a small folder the tests write, not ../shared. */
const DATA_DIR = fixtureDataDir();

describe('campaign routes (on fixture data the test writes)', () => {
  describe.each(ENGINES)('on %s', (engine) => {
    let lb: Leaderboard;
    let app: Hono;
    let database = '';
    let cookie = '';
    let csrf = '';

    beforeAll(async () => {
      database = await freshDatabase(engine);
      lb = await openLeaderboard({ dataDir: DATA_DIR, db: database, threads: 1 });
      await lb.admin.ensureAdminSecret(ADMIN);
      app = createApp({
        lb,

        log: createLogger('silent'),
      }) as unknown as Hono;
      const login = await app.request('/admin/login');
      const nonce = (login.headers.get('set-cookie') ?? '').split(';')[0] as string;
      csrf = attr(
        elements(
          parseHtml(await login.text()),
          (e) => e.tagName === 'input' && attr(e, 'name') === '_csrf',
        )[0] as Element,
        'value',
      ) as string;
      const signed = await app.request('/admin/login', {
        method: 'POST',
        body: new URLSearchParams({ _csrf: csrf, token: ADMIN }),
        headers: { cookie: nonce },
      });
      cookie = `${nonce}; ${(signed.headers.get('set-cookie') ?? '').split(';')[0]}`;
      // Once signed in, forms carry a token bound to the session.
      csrf = attr(
        elements(
          parseHtml(await (await app.request('/admin', { headers: { cookie } })).text()),
          (e) => e.tagName === 'input' && attr(e, 'name') === '_csrf',
        )[0] as Element,
        'value',
      ) as string;
    });
    afterAll(async () => {
      await lb?.close();
    });

    const admin = (path: string, fields: Record<string, string>) =>
      app.request(path, {
        method: 'POST',
        body: new URLSearchParams({ _csrf: csrf, ...fields }),
        headers: { cookie },
      });
    const create = async (fields: Record<string, string>) => {
      const res = await admin('/admin/campaigns', {
        base_url: 'https://annotate.example.org',
        seed: '0',
        items: 'all',
        ...fields,
      });
      const html = await res.text();
      const links = [...html.matchAll(/https:\/\/annotate\.example\.org\/annotate\/(rmb_[\w-]+)/g)].map(
        (m) => m[1] as string,
      );
      const id = /\/admin\/campaigns\/([0-9a-f-]{36})/.exec(html)?.[1] as string;
      return { res, html, links, id };
    };
    const answer = (token: string, body: unknown, type = 'application/json') =>
      app.request(`/api/annotate/${token}/answers`, {
        method: 'POST',
        body: typeof body === 'string' ? body : JSON.stringify(body),
        headers: { 'content-type': type },
      });
    const view = async (token: string) =>
      (await (await app.request(`/api/annotate/${token}`)).json()) as {
        items: { id: string; text: string; tokens?: string[] }[];
        answers: Record<string, unknown>;
      };

    it('takes guidelines of 20,000 Cyrillic characters from the form (within its body cap)', async () => {
      const guidelines = 'Выберите ответ. '.repeat(1250);
      expect(guidelines.length).toBe(20_000);
      const { res, id } = await create({
        task_split: 'RuMedDaNet/test',
        annotators: '2',
        overlap: '1',
        guidelines,
      });
      expect(res.status).toBe(200);
      const { getCampaign } = await import('./queries.js');
      expect((await getCampaign(lb.db.db, id))?.guidelines).toBe(guidelines.trim());
    });

    it('refuses impossible campaigns and anyone but the signed-in admin', async () => {
      expect((await app.request('/admin/campaigns')).status).toBe(303);
      const anon = await app.request('/admin/campaigns', {
        method: 'POST',
        body: new URLSearchParams({ _csrf: csrf }),
      });
      expect(anon.status).toBe(401);
      for (const [fields, message] of [
        [
          { task_split: 'RuMedDaNet/test', annotators: '2', overlap: '3' },
          'the overlap must be between 1 and the number of annotators (2)',
        ],
        [
          { task_split: 'RuMedTest/test', annotators: '2', overlap: '1' },
          'RuMedTest has no test split to annotate',
        ],
        [
          { task_split: 'RuMedDaNet/test', annotators: '2', overlap: '1', base_url: 'javascript:alert(1)' },
          'the address for the links must be an http:// or https:// URL',
        ],
      ] as const) {
        const { res, html } = await create(fields);
        expect([res.status, html.includes(message)]).toEqual([400, true]);
      }
    });

    it('runs a RuMedDaNet campaign from the links to a scored human row with agreement figures', async () => {
      const { res, links, id } = await create({
        name: 'DaNet <round 1>',
        task_split: 'RuMedDaNet/test',
        items: '24',
        annotators: '3',
        overlap: '2',
      });
      expect(res.status).toBe(200);
      expect(links).toHaveLength(3);
      const task = getTask('RuMedDaNet');
      const gold = new Map(
        (await loadSplit(task, 'test', { dataDir: DATA_DIR })).map((r) => [r.id, r.gold as string]),
      );

      // Each annotator sees only their own 16 items (24 × 2 / 3), and nothing of the gold.
      const views = await Promise.all(links.map(view));
      expect(views.map((v) => v.items.length)).toEqual([16, 16, 16]);
      const page = await (await app.request(`/annotate/${links[0]}`)).text();
      expect(page).toContain('Прочитайте фрагмент медицинского текста');
      for (const v of views) for (const item of v.items) expect(Object.keys(item)).toEqual(['id', 'text']);

      // Annotator 1 answers with the gold, annotator 2 says «да» to everything, annotator 3 skips one and
      // says the opposite of the gold otherwise.
      const given = new Map<string, Map<string, string>>();
      for (const [a, v] of views.entries()) {
        const mine = new Map<string, string>();
        given.set(String(a), mine);
        for (const [k, item] of v.items.entries()) {
          const g = gold.get(item.id) as string;
          if (a === 2 && k === 0) {
            expect(
              (await answer(links[a] as string, { item_id: item.id, skipped: true, time_ms: 100 })).status,
            ).toBe(200);
            continue;
          }
          const value = a === 0 ? g : a === 1 ? 'да' : g === 'да' ? 'нет' : 'да';
          mine.set(item.id, value);
          expect(
            (await answer(links[a] as string, { item_id: item.id, answer: value, time_ms: 1500 })).status,
          ).toBe(200);
        }
      }
      // A second answer replaces the first; the time adds up.
      const again = views[0]?.items[0]?.id as string;
      await answer(links[0] as string, { item_id: again, answer: gold.get(again), time_ms: 500 });

      // What an annotator may not do.
      const foreign = views[1]?.items.find((i) => !views[0]?.items.some((j) => j.id === i.id))?.id as string;
      const bad = await answer(links[0] as string, { item_id: foreign, answer: 'да' });
      expect([bad.status, ((await bad.json()) as { error: string }).error]).toEqual([
        400,
        'item_id: not one of your items',
      ]);
      const label = await answer(links[0] as string, { item_id: again, answer: 'maybe' });
      expect(((await label.json()) as { error: string }).error).toBe(
        'answer: label outside the label space (expected one of "да", "нет")',
      );
      expect(
        (await answer(links[0] as string, 'item_id=x', 'application/x-www-form-urlencoded')).status,
      ).toBe(415);
      expect((await answer('rmb_unknown', { item_id: again, answer: 'да' })).status).toBe(401);

      // Export: one line per answer given (skips included), with the time spent.
      const exported = await (
        await app.request(`/admin/campaigns/${id}/answers.jsonl`, { headers: { cookie } })
      ).text();
      const lines = exported
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(lines).toHaveLength(48);
      const twice = lines.find((l) => l.item_id === again && l.annotator === 'annotator 1');
      expect([twice?.answer, twice?.time_ms, twice?.skipped]).toEqual([gold.get(again), 2000, false]);
      expect(lines.filter((l) => l.skipped)).toHaveLength(1);

      // Agreement on the page: Cohen's kappa of annotators 1 and 2 from the same answers.
      const detail = parseHtml(
        await (await app.request(`/admin/campaigns/${id}`, { headers: { cookie } })).text(),
      );
      const pairs = elements(
        detail,
        (e) => e.tagName === 'table' && attr(e, 'class') === 'pairs',
      )[0] as Element;
      const row12 = elements(pairs, (e) => e.tagName === 'tr').find((tr) =>
        textOf(tr).startsWith('annotator 1 – annotator 2'),
      );
      const shared = [...(given.get('0') as Map<string, string>).keys()].filter((i) =>
        given.get('1')?.has(i),
      );
      const k = cohenKappa(
        shared.map((i) => given.get('0')?.get(i) as string),
        shared.map((i) => given.get('1')?.get(i) as string),
      );
      const cells = elements(row12 as Element, (e) => e.tagName === 'td').map(textOf);
      expect(cells.slice(0, 3)).toEqual([
        String(shared.length),
        (100 * k.observed).toFixed(1),
        Number.isNaN(k.kappa) ? '–' : k.kappa.toFixed(3),
      ]);
      // Per-annotator accuracy, public test split: annotator 1 answered with the gold.
      const scores = elements(
        detail,
        (e) => e.tagName === 'table' && attr(e, 'class') === 'scores',
      )[0] as Element;
      expect(
        elements(scores, (e) => e.tagName === 'tr')[1]?.childNodes.map((n) => textOf(n as Element)),
      ).toEqual(['annotator 1', '16', '100.00', '–', '–']);

      // Publish: overlap 2 takes the first annotator's answer by campaign order.
      const published = await admin(`/admin/campaigns/${id}/publish`, {});
      const sid = /submission ([0-9a-f-]{36})/.exec(await published.text())?.[1] as string;
      const entry = (await (await app.request(`/api/submissions/${sid}`)).json()) as {
        kind: string;
        model: string;
        tasks: Record<string, { n: number; metrics: { accuracy: number } }>;
        description: string;
      };
      const combined = [...gold.keys()].flatMap((item) => {
        for (const a of ['0', '1', '2']) {
          const v = given.get(a)?.get(item);
          if (v !== undefined) return [v === gold.get(item)];
        }
        return [];
      });
      expect([entry.kind, entry.model, entry.tasks.RuMedDaNet?.n]).toEqual([
        'human',
        'Human: DaNet <round 1>',
        24,
      ]);
      expect(entry.tasks.RuMedDaNet?.metrics.accuracy).toBeCloseTo(
        (100 * combined.filter(Boolean).length) / combined.length,
        10,
      );
      expect(entry.description).toContain('24 of 24 sampled items answered by 3 annotator(s), 2 per item');
      const board = await (await app.request('/')).text();
      expect(board).toContain('Human: DaNet &lt;round 1&gt;');
      expect(board).toContain('24/24 items');

      // Closing the campaign closes every link.
      expect((await admin(`/admin/campaigns/${id}/close`, {})).status).toBe(303);
      const closedPage = await app.request(`/annotate/${links[1]}`);
      expect([
        closedPage.status,
        (await closedPage.text()).includes('Разметка в этой кампании завершена'),
      ]).toEqual([403, true]);
      expect((await answer(links[1] as string, { item_id: foreign, answer: 'да' })).status).toBe(403);
    });

    it('revokes one link; keeps closed tests to aggregates and waits for their gold', async () => {
      const { id, links } = await create({
        task_split: 'RuMedNLI/private_test',
        items: '9',
        annotators: '2',
        overlap: '1',
      });
      const v = await view(links[0] as string);
      await answer(links[0] as string, { item_id: v.items[0]?.id, answer: 'neutral' });
      const detail = await (await app.request(`/admin/campaigns/${id}`, { headers: { cookie } })).text();
      expect(detail).toContain('A closed test: no per-annotator figures');
      const publish = await (await admin(`/admin/campaigns/${id}/publish`, {})).text();
      // One answered item of nine: a closed test's row over it would be that item's gold.
      expect(publish).toContain(
        'Not published: 8 of 9 sampled items lack their 1 answer(s): a closed test&#39;s human row is published only when the campaign is complete',
      );
      const annotator = /\/annotators\/([0-9a-f-]{36})\/revoke/.exec(detail)?.[1] as string;
      expect((await admin(`/admin/campaigns/${id}/annotators/${annotator}/revoke`, {})).status).toBe(303);
      expect((await app.request(`/annotate/${links[0]}`)).status).toBe(401);
      expect((await app.request(`/annotate/${links[1]}`)).status).toBe(200);
    });

    it('a closed-test human row is scored again when gold is imported by another process (serve import-gold)', async () => {
      const task = getTask('RuMedNLI');
      const ids = (await loadSplit(task, 'private_test', { dataDir: DATA_DIR })).map((r) => r.id);
      const goldDir = (label: (id: string) => string) => {
        const dir = mkdtempSync(join(tmpdir(), 'rumedbench-campaign-gold-'));
        writeFileSync(
          join(dir, 'RuMedNLI.jsonl'),
          ids.map((id) => JSON.stringify({ pairID: id, gold_label: label(id) })).join('\n'),
        );
        return dir;
      };
      await lb.gold.importGold(goldDir(() => 'neutral'));
      const { id, links } = await create({
        task_split: 'RuMedNLI/private_test',
        items: '3',
        annotators: '1',
        overlap: '1',
      });
      const token = links[0] as string;
      for (const item of (await view(token)).items)
        expect((await answer(token, { item_id: item.id, answer: 'neutral' })).status).toBe(200);
      const published = await (await admin(`/admin/campaigns/${id}/publish`, {})).text();
      expect(published).toMatch(/submission [0-9a-f-]{36}/);
      const { getCampaign, getSubmission } = await import('./queries.js');
      const row = (await getCampaign(lb.db.db, id))?.submission_id as string;
      const accuracy = async () =>
        (
          JSON.parse((await getSubmission(lb.db.db, row))?.result ?? '{}') as {
            tasks: Record<string, { metrics: { accuracy: number } }>;
          }
        ).tasks.RuMedNLI?.metrics.accuracy;
      expect(await accuracy()).toBe(100);
      // The admin command (`serve import-gold`, its own run function) opens its own Leaderboard on the database (no
      // app, no routes) and imports new gold: the campaign's row is scored against it, on its own sample.
      const printed: string[] = [];
      const io = { out: (text: string) => printed.push(text), log: createLogger('silent') };
      const dir = goldDir(() => 'contradiction');
      expect(await runImportGold(dir, { data: DATA_DIR, db: database, split: 'private_test' }, io)).toBe(0);
      expect(printed.join('')).toContain('imported (private_test)');
      expect(await accuracy()).toBe(0);
    });

    it('takes ranked answers from the inventory and tag sequences one per token', async () => {
      const top3 = await create({ task_split: 'RuMedTop3/test', items: '4', annotators: '1', overlap: '1' });
      const t = top3.links[0] as string;
      const item = (await view(t)).items[0]?.id as string;
      const [c1, c2, c3, c4] = FIXTURE_CODES as [string, string, string, string];
      expect((await answer(t, { item_id: item, answer: [c1, c2] })).status).toBe(200);
      const outside = await answer(t, { item_id: item, answer: ['Z99'] });
      expect(((await outside.json()) as { error: string }).error).toBe('answer: choose from the list');
      // An answer nested 20,000 deep is refused before it is parsed (it was a 500: a stack overflow).
      const deep = await answer(
        t,
        `{"item_id": "${item}", "answer": ${'['.repeat(20_000)}${']'.repeat(20_000)}}`,
      );
      expect([deep.status, ((await deep.json()) as { code: string }).code]).toEqual([400, 'BAD_ANSWER']);
      expect((await answer(t, { item_id: item, answer: [c1, c2, c3, c4] })).status).toBe(400);

      const ner = await create({ task_split: 'RuMedNER/test', items: '3', annotators: '1', overlap: '1' });
      const n = ner.links[0] as string;
      const nv = await view(n);
      const first = nv.items[0] as { id: string; tokens: string[] };
      const tags = first.tokens.map((_, i) => (i === 0 ? 'B-Drugname' : 'O'));
      expect((await answer(n, { item_id: first.id, answer: tags })).status).toBe(200);
      const short = await answer(n, { item_id: first.id, answer: tags.slice(1) });
      expect(((await short.json()) as { error: string }).error).toMatch(/^answer: \d+ tags for \d+ tokens/);
    });
  });
});
