/**
 * The human evaluation campaigns' queries: campaigns, their annotators, assignments and answers (the human row a
 * campaign publishes is a submission row: db/shared.ts).
 */
import type { Insertable, Kysely } from 'kysely';
import type {
  AnnotatorRow,
  AnnotatorsTable,
  AnswerRow,
  AssignmentsTable,
  CampaignRow,
  CampaignsTable,
  Database,
} from '../db/schema.js';
import { addAudit, inChunks, type Q } from '../db/shared.js';

// The submission rows other concerns use too.
export { getSubmission, insertSubmission, updateResults, updateSubmission } from '../db/shared.js';

interface NewCampaign {
  campaign: Insertable<CampaignsTable>;
  annotators: Insertable<AnnotatorsTable>[];
  assignments: Insertable<AssignmentsTable>[];
}

/** A campaign with its annotators and every assignment, in one transaction. */
export async function createCampaign(db: Kysely<Database>, c: NewCampaign): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await tx.insertInto('campaigns').values(c.campaign).execute();
    await tx.insertInto('annotators').values(c.annotators).execute();
    await inChunks(c.assignments, 500, (chunk) => tx.insertInto('assignments').values(chunk).execute());
    await addAudit(tx, 'admin', 'campaign-create', null, {
      id: c.campaign.id,
      task: c.campaign.task,
      split: c.campaign.split,
      annotators: c.annotators.length,
      assignments: c.assignments.length,
    });
  });
}

export async function getCampaign(db: Q, id: string): Promise<CampaignRow | undefined> {
  return db.selectFrom('campaigns').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function listCampaigns(db: Q): Promise<CampaignRow[]> {
  return db.selectFrom('campaigns').selectAll().orderBy('created_at', 'desc').execute();
}

export async function updateCampaign(
  db: Kysely<Database>,
  id: string,
  change: Partial<Pick<CampaignsTable, 'status' | 'guidelines' | 'submission_id'>>,
  action: string,
): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const r = await tx.updateTable('campaigns').set(change).where('id', '=', id).executeTakeFirst();
    if (Number(r.numUpdatedRows) === 0) return false;
    await addAudit(tx, 'admin', action, null, { campaign: id, ...change });
    return true;
  });
}

export async function annotatorsOf(db: Q, campaignId: string): Promise<AnnotatorRow[]> {
  return db
    .selectFrom('annotators')
    .selectAll()
    .where('campaign_id', '=', campaignId)
    .orderBy('position')
    .execute();
}

export async function findAnnotator(db: Q, tokenHash: string): Promise<AnnotatorRow | undefined> {
  return db.selectFrom('annotators').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

export async function revokeAnnotator(db: Kysely<Database>, id: string): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const r = await tx
      .updateTable('annotators')
      .set({ revoked_at: new Date().toISOString() })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) === 0) return false;
    await addAudit(tx, 'admin', 'annotator-revoke', null, { annotator: id });
    return true;
  });
}

/** An annotator's queue, in order. */
export async function annotatorQueue(db: Q, annotatorId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('assignments')
    .select('item_id')
    .where('annotator_id', '=', annotatorId)
    .orderBy('position')
    .execute();
  return rows.map((r) => r.item_id);
}

export async function isAssigned(db: Q, annotatorId: string, itemId: string): Promise<boolean> {
  const r = await db
    .selectFrom('assignments')
    .select('item_id')
    .where('annotator_id', '=', annotatorId)
    .where('item_id', '=', itemId)
    .executeTakeFirst();
  return r !== undefined;
}

export async function assignmentsOfCampaign(
  db: Q,
  campaignId: string,
): Promise<{ annotator_id: string; item_id: string }[]> {
  return db
    .selectFrom('assignments')
    .select(['annotator_id', 'item_id'])
    .where('campaign_id', '=', campaignId)
    .execute();
}

export async function answersOf(db: Q, annotatorId: string): Promise<AnswerRow[]> {
  return db.selectFrom('answers').selectAll().where('annotator_id', '=', annotatorId).execute();
}

export async function answersOfCampaign(db: Q, campaignId: string): Promise<AnswerRow[]> {
  return db
    .selectFrom('answers')
    .selectAll()
    .where('campaign_id', '=', campaignId)
    .orderBy('updated_at')
    .orderBy('annotator_id')
    .orderBy('item_id')
    .execute();
}

/** Saves an answer (or a skip), replacing an earlier one; the time spent adds up over visits. */
export async function saveAnswer(db: Q, row: Omit<AnswerRow, 'created_at' | 'updated_at'>): Promise<void> {
  const now = new Date().toISOString();
  await db
    .insertInto('answers')
    .values({ ...row, created_at: now, updated_at: now })
    .onConflict((oc) =>
      oc.columns(['annotator_id', 'item_id']).doUpdateSet((eb) => ({
        answer: eb.ref('excluded.answer'),
        skipped: eb.ref('excluded.skipped'),
        time_ms: eb(eb.ref('answers.time_ms'), '+', eb.ref('excluded.time_ms')),
        updated_at: eb.ref('excluded.updated_at'),
      })),
    )
    .execute();
}
