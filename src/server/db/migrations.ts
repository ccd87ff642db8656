/**
 * Numbered migrations, run at every start on SQLite and PostgreSQL alike (Kysely's migrator takes a lock, so several
 * server processes starting together on one PostgreSQL run each migration once). Only portable types: text,
 * integer, double precision.
 */
import { type Kysely, type Migration, type MigrationProvider, sql } from 'kysely';

export const migrations: Record<string, Migration> = {
  '0001_initial': {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('submissions')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('board', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('model', 'text', (c) => c.notNull())
        .addColumn('team', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('link', 'text')
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('params', 'text')
        .addColumn('open_weights', 'integer', (c) => c.notNull())
        .addColumn('token_id', 'text')
        .addColumn('address', 'text', (c) => c.notNull())
        .addColumn('content_hash', 'text', (c) => c.notNull())
        .addColumn('duplicate_of', 'text')
        .addColumn('idempotency_key', 'text', (c) => c.unique())
        .addColumn('result', 'text', (c) => c.notNull())
        .addColumn('summary', 'text', (c) => c.notNull())
        .addColumn('overall', 'double precision')
        .addColumn('response', 'text', (c) => c.notNull())
        .addColumn('hidden', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('flagged', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('verified', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('files', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('submissions_board')
        .on('submissions')
        .columns(['board', 'status'])
        .execute();
      await db.schema
        .createIndex('submissions_hash')
        .on('submissions')
        .columns(['board', 'content_hash'])
        .execute();
      await db.schema
        .createIndex('submissions_quota')
        .on('submissions')
        .columns(['address', 'created_at'])
        .execute();
      await db.schema
        .createTable('submission_files')
        .addColumn('submission_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('content', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('submission_files_pk', ['submission_id', 'name'])
        .execute();
      await db.schema
        .createTable('tokens')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('team', 'text', (c) => c.notNull())
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('revoked_at', 'text')
        .execute();
      await db.schema
        .createTable('settings')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('audit_log')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('at', 'text', (c) => c.notNull())
        .addColumn('actor', 'text', (c) => c.notNull())
        .addColumn('action', 'text', (c) => c.notNull())
        .addColumn('submission_id', 'text')
        .addColumn('detail', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('private_gold')
        .addColumn('task', 'text', (c) => c.notNull())
        .addColumn('item_id', 'text', (c) => c.notNull())
        .addColumn('answer', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('private_gold_pk', ['task', 'item_id'])
        .execute();
    },
  },
  '0002_campaigns': {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('campaigns')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('task', 'text', (c) => c.notNull())
        .addColumn('split', 'text', (c) => c.notNull())
        .addColumn('items', 'text', (c) => c.notNull())
        .addColumn('overlap', 'integer', (c) => c.notNull())
        .addColumn('seed', 'integer', (c) => c.notNull())
        .addColumn('guidelines', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('submission_id', 'text')
        .execute();
      await db.schema
        .createTable('annotators')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('campaign_id', 'text', (c) => c.notNull())
        .addColumn('label', 'text', (c) => c.notNull())
        .addColumn('position', 'integer', (c) => c.notNull())
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('revoked_at', 'text')
        .execute();
      await db.schema
        .createTable('assignments')
        .addColumn('annotator_id', 'text', (c) => c.notNull())
        .addColumn('item_id', 'text', (c) => c.notNull())
        .addColumn('position', 'integer', (c) => c.notNull())
        .addColumn('campaign_id', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('assignments_pk', ['annotator_id', 'item_id'])
        .execute();
      await db.schema
        .createTable('answers')
        .addColumn('annotator_id', 'text', (c) => c.notNull())
        .addColumn('item_id', 'text', (c) => c.notNull())
        .addColumn('campaign_id', 'text', (c) => c.notNull())
        .addColumn('answer', 'text')
        .addColumn('skipped', 'integer', (c) => c.notNull())
        .addColumn('time_ms', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('answers_pk', ['annotator_id', 'item_id'])
        .execute();
      await db.schema.createIndex('answers_campaign').on('answers').column('campaign_id').execute();
      await db.schema.createIndex('assignments_campaign').on('assignments').column('campaign_id').execute();
    },
  },
  '0003_admin_sessions': {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('admin_sessions')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addColumn('address', 'text', (c) => c.notNull())
        .execute();
      // Sessions used to be HMACs under a key kept here: whoever could read the database could mint one.
      await (db as Kysely<{ settings: { key: string } }>)
        .deleteFrom('settings')
        .where('key', '=', 'session_key')
        .execute();
    },
  },
  '0005_trust': {
    async up(db: Kysely<unknown>): Promise<void> {
      // What an uploaded run's trust files say (contamination verdicts, formulations' spread), as JSON.
      await db.schema.alterTable('submissions').addColumn('trust', 'text').execute();
    },
  },
  '0004_platform_runs': {
    async up(db: Kysely<unknown>): Promise<void> {
      // An entry the platform's workers ran (rumedbench worker): the run's settings, prompt versions and manifest.
      await db.schema.alterTable('submissions').addColumn('platform_run', 'text').execute();
    },
  },
  '0006_source': {
    async up(db: Kysely<unknown>): Promise<void> {
      // How a submission came, as a column: human rows were told apart by an address prefix, platform runs by a mark.
      await db.schema
        .alterTable('submissions')
        .addColumn('source', 'text', (c) => c.notNull().defaultTo('upload'))
        .execute();
      const s = db as Kysely<{
        submissions: { source: string; address: string; platform_run: string | null };
      }>;
      await s
        .updateTable('submissions')
        .set({ source: 'campaign' })
        .where('address', 'like', 'campaign:%')
        .execute();
      await s
        .updateTable('submissions')
        .set({ source: 'platform' })
        .where('platform_run', 'is not', null)
        .execute();
    },
  },
  '0007_quota_ladder': {
    async up(db: Kysely<unknown>): Promise<void> {
      // Daily quotas as counters reserved atomically before a score is released: counting rows after the fact let
      // concurrent uploads all pass one remaining slot.
      await db.schema
        .createTable('upload_quota')
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('day', 'text', (c) => c.notNull())
        .addColumn('used', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('upload_quota_pk', ['key', 'scope', 'day'])
        .execute();
      // The closed board's Ladder: who a closed entry belongs to, the score released for it, and its per-item
      // scores (kept server-side: the next upload's margin is computed against them).
      await db.schema.alterTable('submissions').addColumn('ladder_key', 'text').execute();
      await db.schema.alterTable('submissions').addColumn('released', 'double precision').execute();
      await db.schema.alterTable('submissions').addColumn('item_scores', 'text').execute();
    },
  },
  '0008_item_stats': {
    async up(db: Kysely<unknown>): Promise<void> {
      // Per-item counts of each scored entry (server-side only): the boards' rank intervals and groups are
      // recomputed from them. Entries scored before this are filled in from their kept files.
      await db.schema.alterTable('submissions').addColumn('item_stats', 'text').execute();
    },
  },
  '0009_usage': {
    async up(db: Kysely<unknown>): Promise<void> {
      // What an uploaded LLM run spent (tokens, and cost where it was priced), as JSON: the boards' cost column.
      await db.schema.alterTable('submissions').addColumn('usage', 'text').execute();
    },
  },
  '0010_held_gold': {
    async up(db: Kysely<unknown>): Promise<void> {
      // The gold a host holds, per split: the closed tests' as before (private_test), and now a test split whose
      // records only a task's host has (ECG2Pathology on the public board). The old table's rows move over.
      await db.schema
        .createTable('held_gold')
        .addColumn('split', 'text', (c) => c.notNull())
        .addColumn('task', 'text', (c) => c.notNull())
        .addColumn('item_id', 'text', (c) => c.notNull())
        .addColumn('answer', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('held_gold_pk', ['split', 'task', 'item_id'])
        .execute();
      await sql`insert into held_gold (split, task, item_id, answer)
        select 'private_test', task, item_id, answer from private_gold`.execute(db);
      await db.schema.dropTable('private_gold').execute();
    },
  },
  '0011_one_ladder': {
    async up(db: Kysely<unknown>): Promise<void> {
      // One ladder per uploader and board (a ladder per set of tasks let each subset's first upload out exactly),
      // and each upload marked with whether it improved: the best is the latest improvement, and its per-item
      // counts (item_stats) are what the next margin is computed against; the per-item scores are no longer kept.
      await db.schema.alterTable('submissions').addColumn('ladder_improved', 'integer').execute();
      const { rows } = await sql<{
        id: string;
        board: string;
        ladder_key: string;
        released: number | null;
        created_at: string;
      }>`select id, board, ladder_key, released, created_at from submissions where ladder_key is not null`.execute(
        db,
      );
      // Old keys: `<who>|<tasks>` (closed), `<who>|public|<tasks>` (public); a team's name may hold '|'.
      const parts = (r: (typeof rows)[number]) => {
        const cut = r.ladder_key.lastIndexOf('|');
        const who = r.ladder_key.slice(0, cut);
        const publicWho =
          r.board === 'public' && who.endsWith('|public') ? who.slice(0, -'|public'.length) : who;
        return { key: `${publicWho}|${r.board}`, tasks: r.ladder_key.slice(cut + 1).split(',').length };
      };
      // The old best of each new ladder: on its old ladder of the most tasks, the highest release, the earliest.
      const best = new Map<string, { id: string; tasks: number; released: number; created_at: string }>();
      for (const r of rows) {
        const { key, tasks } = parts(r);
        if (r.released === null) continue;
        const b = best.get(key);
        const released = Number(r.released);
        if (
          !b ||
          tasks > b.tasks ||
          (tasks === b.tasks &&
            (released > b.released || (released === b.released && r.created_at < b.created_at)))
        )
          best.set(key, { id: r.id, tasks, released, created_at: r.created_at });
      }
      const bestIds = new Set([...best.values()].map((b) => b.id));
      for (const r of rows) {
        const improved = r.released === null ? null : bestIds.has(r.id) ? 1 : 0;
        await sql`update submissions set ladder_key = ${parts(r).key}, ladder_improved = ${improved}, item_scores = null where id = ${r.id}`.execute(
          db,
        );
      }
      // Each ladder's best and version, moved by every upload on it in the transaction that stores the upload.
      await db.schema
        .createTable('ladders')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('best_id', 'text')
        .addColumn('version', 'integer', (c) => c.notNull())
        .execute();
      for (const [key, b] of best)
        await sql`insert into ladders (key, best_id, version) values (${key}, ${b.id}, 1)`.execute(db);
    },
  },
  '0012_replicate_rows': {
    async up(db: Kysely<unknown>): Promise<void> {
      // The boards' bootstrap replicates per entry and task: a restart of a board of thousands reads them instead of
      // drawing them all again (issue #44). Text (base64) rather than a blob type, the same on SQLite and PostgreSQL.
      await db.schema
        .createTable('replicate_rows')
        .addColumn('submission_id', 'text', (c) => c.notNull())
        .addColumn('task', 'text', (c) => c.notNull())
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('data', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('replicate_rows_pk', ['submission_id', 'task'])
        .execute();
    },
  },
  '0014_sign_in_failures': {
    async up(db: Kysely<unknown>): Promise<void> {
      // Failed admin sign-ins per address and window, in the database: every server process on it counts into the
      // same window (issue #57: two servers on one PostgreSQL each allowed their own 5 failures).
      await db.schema
        .createTable('sign_in_failures')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('window_start', 'double precision', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('sign_in_failures_window')
        .on('sign_in_failures')
        .column('window_start')
        .execute();
    },
  },
  '0017_ladder_best': {
    async up(db: Kysely<unknown>): Promise<void> {
      // Each ladder keeps its best's release and per-item counts itself: read from the best's row, a ladder whose
      // best the admin deleted started again and released the next upload exactly (issue #57).
      await db.schema.alterTable('ladders').addColumn('best_released', 'double precision').execute();
      await db.schema.alterTable('ladders').addColumn('best_items', 'text').execute();
      await sql`update ladders set
        best_released = (select s.released from submissions s where s.id = ladders.best_id and s.status = 'scored'),
        best_items = (select s.item_stats from submissions s where s.id = ladders.best_id and s.status = 'scored')`.execute(
        db,
      );
    },
  },
};

export const MIGRATIONS: MigrationProvider = {
  getMigrations: async () => migrations,
};
