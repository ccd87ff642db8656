/**
 * Uploads and the platform's own entries (on fixture data the test writes): an upload that names the platform's
 * address and idempotency key cannot stand in for a platform run; each board of an evaluation is its own entry;
 * every submission says how it came (`source`), and a database of the previous release is migrated to say it too.
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, type Migration, Migrator, SqliteDialect } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENGINES, freshDatabase } from '../../../test/helpers/engines.js';
import { fixtureDataDir, writeFixturePredictions } from '../../../test/helpers/fixture-data.js';
import { listAll } from '../admin/queries.js';
import type { PlatformRun } from '../boards/entries.js';
import { migrations } from '../db/migrations.js';
import type { Leaderboard } from '../leaderboard.js';
import { openLeaderboard } from '../serve.js';

const DATA = fixtureDataDir();
const predictions = () => {
  const dir = writeFixturePredictions(DATA, mkdtempSync(join(tmpdir(), 'rumedbench-uploads-')));
  return readdirSync(dir).map((n) => ({ name: n, data: new Uint8Array(readFileSync(join(dir, n))) }));
};
const run = (plan: string): PlatformRun => ({
  plan_id: plan,
  endpoint: 'fake-med',
  settings: { temperature: 0 },
  prompt_versions: {},
  manifest: {},
});
const META = {
  model: 'forged',
  team: 'nobody',
  description: '',
  link: null,
  kind: 'LLM' as const,
  params: null,
  open_weights: false,
  board: 'public' as const,
  trust: null,
  usage: null,
};

describe.each(ENGINES)('uploads and platform entries (%s)', (engine) => {
  let lb: Leaderboard;
  beforeAll(async () => {
    lb = await openLeaderboard({ dataDir: DATA, db: await freshDatabase(engine), threads: 1, bootstrap: 0 });
  });
  afterAll(async () => {
    await lb?.close();
  });

  it("an upload with the platform's address and key cannot take a platform run's place", async () => {
    const plan = 'p-0123456789ab';
    // What an uploader behind a careless proxy can send: X-Forwarded-For: platform, the key the platform once used.
    const forged = await lb.uploads.submit({
      files: predictions(),
      metadata: META,
      who: { tokenId: null, team: null, address: 'platform' },
      idempotencyKey: `platform-run:${plan}`,
    });
    expect(forged.status).toBe(201);
    const real = await lb.uploads.recordPlatformRun({
      files: predictions(),
      board: 'public',
      model: 'fake-med',
      team: 'platform',
      description: 'Run by the platform (fake-med).',
      run: run(plan),
    });
    expect(real.id).not.toBe(forged.body.id);
    const rows = Object.fromEntries(
      (await listAll(lb.db.db)).map((r) => [
        r.id,
        { source: r.source, verified: r.verified, model: r.model },
      ]),
    );
    expect(rows[forged.body.id]).toEqual({ source: 'upload', verified: 0, model: 'forged' });
    expect(rows[real.id]).toEqual({ source: 'platform', verified: 1, model: 'fake-med' });
    // Imported again (a restart between scoring and marking it), the platform run lands once.
    const again = await lb.uploads.recordPlatformRun({
      files: predictions(),
      board: 'public',
      model: 'fake-med',
      team: 'platform',
      description: 'Run by the platform (fake-med).',
      run: run(plan),
    });
    expect(again.id).toBe(real.id);
    // The same plan's closed board is an entry of its own, never a replay of the public one.
    const closed = await lb.uploads.recordPlatformRun({
      files: predictions(),
      board: 'closed',
      model: 'fake-med',
      team: 'platform',
      description: 'Run by the platform (fake-med).',
      run: run(plan),
    });
    expect(closed.id).not.toBe(real.id);
    expect(closed.board).toBe('closed');
  });
});

describe('the leaderboard database of the previous release (SQLite)', () => {
  it('is migrated: human rows and platform runs get their source, uploads stay uploads', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'rumedbench-old-db-')), 'board.sqlite');
    // The previous release's schema: every migration before 0006_source.
    const old: Record<string, Migration> = Object.fromEntries(
      Object.entries(migrations).filter(([name]) => name < '0006'),
    );
    const db = new Kysely<Record<string, Record<string, unknown>>>({
      dialect: new SqliteDialect({ database: new SQLite(file) }),
    });
    const r = await new Migrator({ db, provider: { getMigrations: async () => old } }).migrateToLatest();
    expect(r.error).toBeUndefined();
    const row = (id: string, address: string, platformRun: string | null) => ({
      id,
      created_at: '2026-11-01T00:00:00.000Z',
      board: 'public',
      status: 'scored',
      model: id,
      team: '',
      description: '',
      link: null,
      kind: 'LLM',
      params: null,
      open_weights: 0,
      token_id: null,
      address,
      content_hash: id,
      duplicate_of: null,
      idempotency_key: null,
      result: '{}',
      summary: '{}',
      overall: null,
      response: '{}',
      files: '[]',
      platform_run: platformRun,
    });
    await db
      .insertInto('submissions')
      .values([
        row('u1', '127.0.0.1', null),
        row('h1', 'campaign:c-1', null),
        row('p1', 'platform', JSON.stringify(run('p-0123456789ab'))),
      ])
      .execute();
    await db.destroy();

    const lb = await openLeaderboard({ dataDir: DATA, db: file, threads: 1, bootstrap: 0 });
    try {
      const sources = Object.fromEntries((await listAll(lb.db.db)).map((s) => [s.id, s.source]));
      expect(sources).toEqual({ u1: 'upload', h1: 'campaign', p1: 'platform' });
    } finally {
      await lb.close();
    }
  });
});
