/**
 * What `createApp` itself answers, in process, on SQLite and PostgreSQL: unknown paths and ids get a 404 with a
 * code, and a crash a generic 500 that says nothing of the database and is logged. Each concern's routes have
 * their own suite beside them (boards/, submissions/, admin/, campaigns/); security.test.ts has the attacks.
 */
import { describe, expect, it } from 'vitest';
import { ENGINES, freshDatabase } from '../../test/helpers/engines.js';
import { fixtureDataDir } from '../../test/helpers/fixture-data.js';
import { type App, useLeaderboardApp } from '../../test/helpers/leaderboard-app.js';
import { createApp } from './app.js';
import { Leaderboard } from './leaderboard.js';

describe('app (on fixture data the test writes)', () => {
  describe.each(ENGINES)('on %s', (engine) => {
    const t = useLeaderboardApp(engine, fixtureDataDir());
    const { request, logged } = t;

    it('answers unknown paths and ids with 404, and a crash with a generic 500 that is logged', async () => {
      expect((await request("/api/submissions/'%20OR%201=1--")).status).toBe(404);
      const nf = await request('/api/nothing');
      expect([nf.status, await nf.json()]).toEqual([404, { error: 'not found', code: 'NOT_FOUND' }]);
      expect((await request('/board/secret')).status).toBe(404);
      const { openDatabase } = await import('./db/connect.js');
      const gone = await openDatabase(await freshDatabase(engine));
      await gone.close();
      const broken = createApp({
        lb: new Leaderboard(gone, t.lb.scorer, t.lb.options),
        log: t.log,
      }) as unknown as App;
      const crash = await broken.request('/api/boards/public');
      expect([crash.status, await crash.json()]).toEqual([
        500,
        { error: 'internal error', code: 'INTERNAL' },
      ]);
      const page = await broken.request('/');
      expect(page.status).toBe(500);
      expect(await page.text()).not.toMatch(/destroy|Kysely|driver/i);
      expect(logged.some((l) => l.startsWith('error: GET /api/boards/public:'))).toBe(true);
      // An annotator's link is its token: a crash on it is logged without it.
      await broken.request('/api/annotate/secret-annotator-token-123/answers', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      expect(logged.join('\n')).not.toContain('secret-annotator-token-123');
      expect(logged.some((l) => l.startsWith('error: POST /api/annotate/…/answers:'))).toBe(true);
    });
  });
});
