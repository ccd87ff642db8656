/**
 * Pages that cannot be used to burn CPU (issue #57, finding 4): the chart cache evicts one drawing at a time, the
 * least recently used, within a bounded size; charts are drawn in a lane of their own, so that uploads are never
 * queued behind them, and a full lane answers "busy" at once; and every page that draws charts is counted per
 * address like the boards' API. Each test here failed before its fix.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixtureDataDir, writeFixturePredictions } from '../../test/helpers/fixture-data.js';
import { type App, useLeaderboardApp } from '../../test/helpers/leaderboard-app.js';
import { createLogger } from '../log.js';
import { type Chart, scoreChart } from '../report/charts.js';
import { STRINGS } from '../report/i18n.js';
import { createApp } from './app.js';
import { ChartCache } from './charts.js';
import { Leaderboard } from './leaderboard.js';
import { drawForPhone, PHONE_CHART_PX, svgWidth } from './phone-charts.js';
import { CHART_QUEUE, ChartsBusyError, Scorer } from './scorer.js';
import { DEFAULT_LIMITS } from './upload.js';

const FIXTURE = fixtureDataDir();
const chart = (system: string, score = 0.5): Chart =>
  scoreChart('RuMedDaNet', [{ system, score, ci: [score - 0.1, score + 0.1] }], [], STRINGS.en);

/** A renderer that counts what it draws (the cache's own logic is under test; the real lane is tested below). */
function countingRenderer(svgBytes = 10) {
  const drawn: string[] = [];
  return {
    drawn,
    render: async (list: [string, unknown, string][]): Promise<[string, string, string][]> => {
      drawn.push(...list.map(([, , label]) => label));
      return list.map(([id]) => [id, 'x'.repeat(svgBytes), '']);
    },
  };
}

describe('the chart cache', () => {
  it('evicts the least recently used drawing, one at a time, not the whole cache', async () => {
    const r = countingRenderer();
    const cache = new ChartCache(r, { max: 3 });
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((s) => chart(s)) as [Chart, Chart, Chart, Chart];
    for (const x of [a, b, c]) await cache.draw([x]);
    await cache.draw([a]); // a is now the most recently used; b the least
    await cache.draw([d]); // full: b goes, alone
    expect(cache.size.charts).toBe(3);
    r.drawn.length = 0;
    for (const x of [a, c, d]) await cache.draw([x]);
    expect(r.drawn).toEqual([]);
    await cache.draw([b]);
    expect(r.drawn).toEqual([b.description]);
    expect(cache.size.charts).toBe(3);
  });

  it('keeps its drawings within a bound of bytes, whatever each weighs', async () => {
    const r = countingRenderer(400);
    const cache = new ChartCache(r, { maxBytes: 1000 });
    for (let i = 0; i < 20; i++) await cache.draw([chart(`s${i}`)]);
    expect(cache.size.bytes).toBeLessThanOrEqual(1000);
    expect(cache.size.charts).toBeGreaterThanOrEqual(1);
  });

  it('draws charts asked for again while they are being drawn once', async () => {
    const r = countingRenderer();
    const cache = new ChartCache(r);
    const x = chart('same');
    const all = await Promise.all(Array.from({ length: 8 }, () => cache.draw([x])));
    expect(r.drawn).toEqual([x.description]);
    expect(new Set(all).size).toBe(1);
  });
});

describe('the chart lane (real worker threads)', () => {
  it('never queues scoring behind charts, and answers busy once its queue is full', async () => {
    const scorer = new Scorer({ dataDir: FIXTURE, threads: 1 });
    try {
      const order: string[] = [];
      // One chart being drawn and the lane's queue full: the next is refused at once, not queued.
      const charts = Array.from({ length: CHART_QUEUE + 1 }, (_, i) =>
        scorer
          .render([[`c${i}`, chart(`sys${i}`, i / 100).spec, `chart ${i}`]])
          .then(() => order.push('chart')),
      );
      await expect(scorer.render([['late', chart('late').spec, 'late']])).rejects.toBeInstanceOf(
        ChartsBusyError,
      );
      // Scoring meanwhile: with charts drawn in the scoring threads, it waited for every chart queued before it.
      const data = readFileSync(
        join(
          writeFixturePredictions(FIXTURE, mkdtempSync(join(tmpdir(), 'rumedbench-lane-')), 2),
          'RuMedNLI.jsonl',
        ),
      );
      const scored = scorer
        .score({
          board: 'public',
          files: [{ name: 'RuMedNLI.jsonl', data: new Uint8Array(data) }],
          source: 'upload',
          bootstrap: 50,
          seed: 0,
          limits: DEFAULT_LIMITS,
        })
        .then(() => order.push('score'));
      await Promise.all([...charts, scored]);
      expect(order.indexOf('score')).toBeLessThan(order.length - 1);
      expect(order.filter((o) => o === 'chart')).toHaveLength(CHART_QUEUE + 1);
    } finally {
      await scorer.close();
    }
  }, 60_000);
});

describe("a phone's drawing (issue #63)", () => {
  it("is drawn where the page's is wider than a phone's box, no wider than it, its long name cut; none otherwise", async () => {
    const long = 'Linear models, tf-idf and logistic regression (upstream)';
    const scorer = new Scorer({ dataDir: FIXTURE, threads: 1 });
    try {
      const [[, wide, phone]] = (await scorer.render([['c', chart(long).spec, 'c']])) as [
        [string, string, string],
      ];
      expect(svgWidth(wide)).toBeGreaterThan(PHONE_CHART_PX);
      expect(svgWidth(phone)).toBeLessThanOrEqual(PHONE_CHART_PX);
      expect(svgWidth(phone)).toBeGreaterThan(PHONE_CHART_PX - 20);
      // The axis's label (drawn text; the marks' aria-labels keep the name whole) cut shorter than on the page's.
      const label = (svg: string) => /<text[^>]*>(Linear models[^<]*)<\/text>/.exec(svg)?.[1] ?? '';
      expect(label(phone)).toMatch(/^Linear models, tf-idf.*…$/);
      expect(label(phone).length).toBeLessThan(label(wide).length);
      // Drawn for a box as wide as the page's drawing, the page's drawing is all there is.
      const { phone: none } = await drawForPhone(chart(long).spec, 'c', svgWidth(wide));
      expect(none).toBe('');
    } finally {
      await scorer.close();
    }
  }, 60_000);
});

describe('pages that draw charts, limited per address (on fixture data the test writes)', () => {
  const t = useLeaderboardApp('sqlite', FIXTURE);

  it('counts entry, comparison and board pages per address as the API is counted, one count for all', async () => {
    const preds = writeFixturePredictions(FIXTURE, mkdtempSync(join(tmpdir(), 'rumedbench-pages-')), 2);
    const { body } = await t.upload([
      { name: 'RuMedNLI.jsonl', data: readFileSync(join(preds, 'RuMedNLI.jsonl')) },
    ]);
    const id = body.id as string;
    const app = createApp({
      lb: new Leaderboard(t.lb.db, t.lb.scorer, { ...t.lb.options, apiPerMinute: 4 }),
      log: createLogger('silent'),
      trustedProxies: 1,
    }) as unknown as App;
    const from = async (address: string, path: string) =>
      (await app.request(path, { headers: { 'x-forwarded-for': address } })).status;
    const a = [];
    for (const path of [`/submissions/${id}`, `/submissions/${id}?lang=ru`, '/', `/compare?a=${id}&b=${id}`])
      a.push(await from('203.0.113.5', path));
    expect(a).toEqual([200, 200, 200, 200]);
    const over = await app.request(`/submissions/${id}`, { headers: { 'x-forwarded-for': '203.0.113.5' } });
    expect([over.status, Number(over.headers.get('retry-after')) > 0]).toEqual([429, true]);
    expect(await from('203.0.113.5', '/board/public')).toBe(429);
    expect(await from('203.0.113.5', `/compare?a=${id}&b=${id}`)).toBe(429);
    expect(await from('203.0.113.5', '/api/boards/public')).toBe(429);
    // Another address has a count of its own.
    expect(await from('198.51.100.8', `/submissions/${id}`)).toBe(200);
  });
});
