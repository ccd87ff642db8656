/**
 * Human evaluation campaigns inside the leaderboard: the admin creates one (a task, a split, a seeded sample, an
 * overlap, one invitation token per annotator), annotators answer their own items through their link, and the
 * answers become a human row on the board, scored by the usual scorer over the items answered, with agreement
 * figures. Annotators see only their own items: never the gold, never another annotator's answers.
 */

import { createHash, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { AnnotateData } from '../../browser/annotate-data.js';
import { loadSplit, readGoldLabels } from '../../data/load.js';
import { median } from '../../metrics/quantile.js';
import { checkAnswer } from '../../scoring/validate.js';
import { getTask, isTaskName } from '../../tasks/registry.js';
import type { TaskDefinition, TaskRecord } from '../../tasks/types.js';
import { newToken, sha256Hex } from '../auth.js';
import { summarize } from '../boards/entries.js';
import type { Boards } from '../boards/service.js';
import type {
  AnnotatorRow,
  AnswerRow,
  BoardName,
  CampaignRow,
  CampaignSplit,
  Database,
} from '../db/schema.js';
import { HttpError } from '../errors.js';
import type { Gold } from '../gold/service.js';
import type { Scorer } from '../scorer.js';
import * as q from './queries.js';
import {
  type Agreement,
  type AnnotatorScore,
  type AnswerValue,
  agreement,
  annotatorScores,
  combine,
  type ItemAnswers,
  type Rule,
  ruleOf,
} from './results.js';
import { assignItems, sampleItems } from './sampling.js';

/** A campaign as stored: what its pages show. */
export type Campaign = CampaignRow;

export interface CampaignSpec {
  task: string;
  split: CampaignSplit;
  /** How many items to sample, or all of the split. */
  items: number | 'all';
  overlap: number;
  seed: number;
  annotators: number;
  name?: string;
  guidelines?: string;
}

export interface Invitation {
  label: string;
  token: string;
}

export interface AnnotatorProgress {
  id: string;
  label: string;
  revoked: boolean;
  assigned: number;
  answered: number;
  skipped: number;
  /** Median seconds per answered item. */
  median_seconds: number | null;
}

export interface CampaignDetail {
  campaign: CampaignRow;
  items: number;
  rule: Rule;
  annotators: AnnotatorProgress[];
  /** Items with at least one answer, of those sampled. */
  coverage: { answered: number; sampled: number };
  agreement: Agreement;
  /** Per-annotator accuracy: on the public test split only (a closed test publishes no per-person figures). */
  scores: AnnotatorScore[] | null;
}

/**
 * What the annotator's page needs: the task, the items of this annotator (never the gold), their answers. The page
 * adds its token; the shape is the one its script reads (src/browser/annotate-data.ts).
 */
export type AnnotatorView = Omit<AnnotateData, 'token'>;

const BOARD_OF: Record<CampaignSplit, BoardName> = { test: 'public', private_test: 'closed' };

/** What the campaign service works with: the leaderboard's database, services and options, handed in by Leaderboard. */
export interface CampaignDeps {
  db: Kysely<Database>;
  scorer: Scorer;
  boards: Boards;
  gold: Gold;
  options: { dataDir: string; bootstrap: number; seed: number };
}

export class Campaigns {
  private readonly records = new Map<string, Promise<TaskRecord[]>>();
  private readonly inventories = new Map<string, Promise<string[]>>();

  constructor(private readonly d: CampaignDeps) {}

  /**
   * After new closed-test gold: the human rows published from closed-test campaigns, scored again against it. Run by
   * every import, whichever door it comes through (the admin's page, `serve import-gold`): Leaderboard hooks it to
   * `Gold.afterImport`.
   */
  async republishClosed(): Promise<void> {
    for (const c of await q.listCampaigns(this.d.db))
      if (c.split === 'private_test' && c.submission_id) {
        // A row published before campaigns had to be complete is not published again until it is.
        await this.publish(c.id).catch((e: unknown) => {
          if (!(e instanceof HttpError && e.code === 'INCOMPLETE_CAMPAIGN')) throw e;
        });
      }
  }

  private load(task: TaskDefinition, split: CampaignSplit): Promise<TaskRecord[]> {
    const key = `${task.name}/${split}`;
    let hit = this.records.get(key);
    if (!hit) {
      hit = loadSplit(task, split, { dataDir: this.d.options.dataDir });
      this.records.set(key, hit);
      hit.catch(() => this.records.delete(key));
    }
    return hit;
  }

  private inventory(task: TaskDefinition): Promise<string[]> {
    let hit = this.inventories.get(task.name);
    if (!hit) {
      hit = readGoldLabels(task, 'train', { dataDir: this.d.options.dataDir }).then((s) => [...s].sort());
      this.inventories.set(task.name, hit);
    }
    return hit;
  }

  async create(spec: CampaignSpec): Promise<{ campaign: CampaignRow; invitations: Invitation[] }> {
    if (!isTaskName(spec.task)) throw new HttpError(400, 'BAD_CAMPAIGN', `unknown task "${spec.task}"`);
    const task = getTask(spec.task);
    if (task.kind === 'multilabel')
      throw new HttpError(
        400,
        'BAD_CAMPAIGN',
        `${task.name} is multi-label: campaigns annotate text tasks only`,
      );
    if (
      !(task.splits as readonly string[]).includes(spec.split) ||
      (spec.split !== 'test' && spec.split !== 'private_test')
    ) {
      throw new HttpError(400, 'BAD_CAMPAIGN', `${task.name} has no ${spec.split} split to annotate`);
    }
    if (!Number.isInteger(spec.annotators) || spec.annotators < 1 || spec.annotators > 200)
      throw new HttpError(400, 'BAD_CAMPAIGN', 'between 1 and 200 annotators');
    if (!Number.isInteger(spec.overlap) || spec.overlap < 1 || spec.overlap > spec.annotators)
      throw new HttpError(
        400,
        'BAD_CAMPAIGN',
        `the overlap must be between 1 and the number of annotators (${spec.annotators})`,
      );
    if (spec.items !== 'all' && (!Number.isInteger(spec.items) || spec.items < 1))
      throw new HttpError(400, 'BAD_CAMPAIGN', 'items: a positive number, or all');
    const records = await this.load(task, spec.split);
    // Stratified by the gold label where one is known (labels and codes; not tag sequences, not closed tests).
    const sample = sampleItems(
      records.map((r) => (typeof r.gold === 'string' ? { id: r.id, label: r.gold } : { id: r.id })),
      spec.items,
      spec.seed,
    );
    const queues = assignItems(sample, spec.annotators, spec.overlap, spec.seed);
    const id = randomUUID();
    const invitations: Invitation[] = [];
    const annotators = queues.map((_, i) => {
      const token = newToken();
      const label = `annotator ${i + 1}`;
      invitations.push({ label, token });
      return {
        id: randomUUID(),
        campaign_id: id,
        label,
        position: i,
        token_hash: sha256Hex(token),
        revoked_at: null,
      };
    });
    const campaign: CampaignRow = {
      id,
      name: spec.name?.trim() || `${task.name} ${spec.split} ${new Date().toISOString().slice(0, 10)}`,
      created_at: new Date().toISOString(),
      task: task.name,
      split: spec.split,
      items: JSON.stringify(sample),
      overlap: spec.overlap,
      seed: spec.seed,
      guidelines: spec.guidelines?.trim() || task.guidelines,
      status: 'open',
      submission_id: null,
    };
    await q.createCampaign(this.d.db, {
      campaign,
      annotators,
      assignments: queues.flatMap((queue, a) =>
        queue.map((item, position) => ({
          annotator_id: (annotators[a] as { id: string }).id,
          item_id: item,
          position,
          campaign_id: id,
        })),
      ),
    });
    return { campaign, invitations };
  }

  async get(id: string): Promise<CampaignRow> {
    const c = await q.getCampaign(this.d.db, id);
    if (!c) throw new HttpError(404, 'NOT_FOUND', `no campaign ${id}`);
    return c;
  }

  list(): Promise<CampaignRow[]> {
    return q.listCampaigns(this.d.db);
  }

  /** The answers of a campaign per item, by annotator order; skips are not answers. */
  private byItem(
    sample: readonly string[],
    annotators: readonly AnnotatorRow[],
    answers: readonly AnswerRow[],
  ): ItemAnswers[] {
    const position = new Map(annotators.map((a) => [a.id, a.position]));
    const per = new Map<string, ItemAnswers>(sample.map((id) => [id, { id, answers: [] }]));
    for (const a of answers) {
      if (a.skipped || a.answer === null) continue;
      per.get(a.item_id)?.answers.push({
        annotator: position.get(a.annotator_id) as number,
        value: JSON.parse(a.answer) as AnswerValue,
      });
    }
    for (const item of per.values()) item.answers.sort((x, y) => x.annotator - y.annotator);
    return [...per.values()];
  }

  async detail(id: string): Promise<CampaignDetail> {
    const campaign = await this.get(id);
    const task = getTask(campaign.task);
    const sample = JSON.parse(campaign.items) as string[];
    const annotators = await q.annotatorsOf(this.d.db, id);
    const answers = await q.answersOfCampaign(this.d.db, id);
    const assigned = await q.assignmentsOfCampaign(this.d.db, id);
    const items = this.byItem(sample, annotators, answers);
    let scores: AnnotatorScore[] | null = null;
    if (campaign.split === 'test') {
      const records = await this.load(task, 'test');
      const gold = new Map(records.flatMap((r) => (r.gold === undefined ? [] : [[r.id, r.gold] as const])));
      scores = annotatorScores(task, items, gold, annotators.length);
    }
    return {
      campaign,
      items: sample.length,
      rule: ruleOf(task, campaign.overlap),
      annotators: annotators.map((a) => {
        const mine = answers.filter((x) => x.annotator_id === a.id);
        const done = mine.filter((x) => !x.skipped && x.answer !== null);
        return {
          id: a.id,
          label: a.label,
          revoked: a.revoked_at !== null,
          assigned: assigned.filter((x) => x.annotator_id === a.id).length,
          answered: done.length,
          skipped: mine.length - done.length,
          median_seconds: median(done.map((x) => x.time_ms / 1000)),
        };
      }),
      coverage: { answered: items.filter((i) => i.answers.length > 0).length, sampled: sample.length },
      agreement: agreement(task, items, annotators.length, campaign.overlap),
      scores,
    };
  }

  /** The annotator behind a token, if the token and the campaign are still good. */
  async session(token: string): Promise<{ campaign: CampaignRow; annotator: AnnotatorRow }> {
    const annotator = await q.findAnnotator(this.d.db, sha256Hex(token));
    if (!annotator || annotator.revoked_at !== null) {
      throw new HttpError(401, 'BAD_TOKEN', 'this invitation link is not valid (unknown or revoked)');
    }
    const campaign = (await q.getCampaign(this.d.db, annotator.campaign_id)) as CampaignRow;
    if (campaign.status !== 'open')
      throw new HttpError(403, 'CAMPAIGN_CLOSED', 'this campaign is closed; thank you');
    return { campaign, annotator };
  }

  async view(token: string): Promise<AnnotatorView> {
    const { campaign, annotator } = await this.session(token);
    const task = getTask(campaign.task);
    // Refused when the campaign was made (create), so never met here.
    if (task.kind === 'multilabel') throw new HttpError(400, 'BAD_CAMPAIGN', `${task.name} is multi-label`);
    const queue = await q.annotatorQueue(this.d.db, annotator.id);
    const byId = new Map((await this.load(task, campaign.split as CampaignSplit)).map((r) => [r.id, r]));
    const answers: AnnotatorView['answers'] = {};
    for (const a of await q.answersOf(this.d.db, annotator.id)) {
      answers[a.item_id] = {
        answer: a.answer === null ? null : (JSON.parse(a.answer) as AnswerValue),
        skipped: a.skipped === 1,
      };
    }
    const labels =
      task.kind === 'classification'
        ? task.labels.map((value, i) => ({
            value,
            name: task.labelNames?.[value] ?? value,
            keys: [String(i + 1), ...(task.labelKeys?.[value] ?? [])],
          }))
        : [];
    return {
      campaign: {
        id: campaign.id,
        name: campaign.name,
        task: task.name,
        kind: task.kind,
        guidelines: campaign.guidelines,
      },
      annotator: annotator.position + 1,
      labels,
      inventory: task.kind === 'ranking' ? await this.inventory(task) : [],
      entityTypes: task.kind === 'tagging' ? [...task.entityTypes] : [],
      items: queue.map((id) => {
        const r = byId.get(id) as TaskRecord;
        return task.kind === 'tagging'
          ? { id, text: '', tokens: (r.raw[task.tokensField] as string[]).map(String) }
          : { id, text: task.prompt.render(r.raw) };
      }),
      answers,
    };
  }

  /** Saves one answer (or a skip) of the annotator behind `token`, checked like a submission's prediction. */
  /** An answer, its shape checked at the route (routes.tsx); here what needs the campaign and the data. */
  async answer(
    { campaign, annotator }: { campaign: CampaignRow; annotator: AnnotatorRow },
    b: { item_id: string; answer?: unknown; skipped: boolean; time_ms: number },
  ): Promise<void> {
    if (!(await q.isAssigned(this.d.db, annotator.id, b.item_id))) {
      throw new HttpError(400, 'BAD_ANSWER', 'item_id: not one of your items');
    }
    const skipped = b.skipped;
    const timeMs = b.time_ms;
    let answer: string | null = null;
    if (!skipped) {
      const task = getTask(campaign.task);
      let tokens: number | undefined;
      if (task.kind === 'tagging') {
        const r = (await this.load(task, campaign.split as CampaignSplit)).find((x) => x.id === b.item_id);
        tokens = (r?.raw[task.tokensField] as unknown[] | undefined)?.length;
      }
      const bad = checkAnswer(task, b.answer, tokens);
      if (bad) throw new HttpError(400, 'BAD_ANSWER', `answer: ${bad.message} (expected ${bad.expected})`);
      const inventory = task.kind === 'ranking' ? new Set(await this.inventory(task)) : undefined;
      if (inventory && !(b.answer as string[]).every((v) => inventory.has(v))) {
        throw new HttpError(400, 'BAD_ANSWER', 'answer: choose from the list');
      }
      answer = JSON.stringify(b.answer);
    }
    await q.saveAnswer(this.d.db, {
      annotator_id: annotator.id,
      item_id: b.item_id,
      campaign_id: campaign.id,
      answer,
      skipped: skipped ? 1 : 0,
      time_ms: timeMs,
    });
  }

  async setStatus(id: string, status: 'open' | 'closed'): Promise<void> {
    if (
      !(await q.updateCampaign(
        this.d.db,
        id,
        { status },
        `campaign-${status === 'open' ? 'reopen' : 'close'}`,
      ))
    ) {
      throw new HttpError(404, 'NOT_FOUND', `no campaign ${id}`);
    }
  }

  async setGuidelines(id: string, guidelines: string): Promise<void> {
    if (guidelines.trim() === '' || guidelines.length > 20_000)
      throw new HttpError(400, 'BAD_CAMPAIGN', 'guidelines: 1 to 20,000 characters');
    if (!(await q.updateCampaign(this.d.db, id, { guidelines: guidelines.trim() }, 'campaign-guidelines'))) {
      throw new HttpError(404, 'NOT_FOUND', `no campaign ${id}`);
    }
  }

  async revoke(campaignId: string, annotatorId: string): Promise<void> {
    const a = (await q.annotatorsOf(this.d.db, campaignId)).find((x) => x.id === annotatorId);
    if (!a || !(await q.revokeAnnotator(this.d.db, annotatorId))) {
      throw new HttpError(404, 'NOT_FOUND', `no active annotator ${annotatorId} in campaign ${campaignId}`);
    }
  }

  /** One JSON line per answer: annotator, item id, answer, whether skipped, time spent, when. */
  async export(id: string): Promise<string> {
    const campaign = await this.get(id);
    const label = new Map((await q.annotatorsOf(this.d.db, id)).map((a) => [a.id, a.label]));
    return (await q.answersOfCampaign(this.d.db, id))
      .map(
        (a) =>
          `${JSON.stringify({
            campaign: campaign.id,
            task: campaign.task,
            annotator: label.get(a.annotator_id),
            item_id: a.item_id,
            answer: a.answer === null ? null : JSON.parse(a.answer),
            skipped: a.skipped === 1,
            time_ms: a.time_ms,
            answered_at: a.updated_at,
          })}\n`,
      )
      .join('');
  }

  /**
   * The campaign's answers as a human row: one answer per item by the campaign's rule, scored over the items
   * answered; the row says how many of the sampled items it covers. Publishing again updates the same row.
   */
  async publish(id: string): Promise<string> {
    const d = await this.detail(id);
    const c = d.campaign;
    const task = getTask(c.task);
    const sample = JSON.parse(c.items) as string[];
    const annotators = await q.annotatorsOf(this.d.db, id);
    const items = this.byItem(sample, annotators, await q.answersOfCampaign(this.d.db, id));
    const predictions = items.flatMap((i) => {
      const v = combine(i, d.rule);
      return v === undefined ? [] : [[i.id, v] as [string, AnswerValue]];
    });
    if (predictions.length === 0) throw new HttpError(409, 'NOTHING_TO_PUBLISH', 'no item has an answer yet');
    // A closed test's row over a part of the sample is an oracle (one answered item: its accuracy is its gold):
    // it is published only when every sampled item has its planned number of answers.
    const short = items.filter((i) => i.answers.length < c.overlap).length;
    if (c.split === 'private_test' && short > 0) {
      throw new HttpError(
        409,
        'INCOMPLETE_CAMPAIGN',
        `${short} of ${sample.length} sampled items lack their ${c.overlap} answer(s): a closed test's human row is published only when the campaign is complete`,
      );
    }
    const board = BOARD_OF[c.split as CampaignSplit];
    await this.d.gold.sync();
    const { result } = await this.d.scorer.subset({
      task: task.name,
      board,
      predictions,
      bootstrap: this.d.options.bootstrap,
      seed: this.d.options.seed,
      source: `campaign ${c.name}`,
    });
    if (result.errors.length > 0) {
      throw new HttpError(
        409,
        'NOT_SCORED',
        `the answers could not be scored: ${result.errors[0]?.message ?? ''}`,
      );
    }
    if (!result.tasks[task.name]) {
      throw new HttpError(
        409,
        'NO_GOLD',
        `no gold for ${task.name}'s ${c.split} split yet: import it first (serve import-gold)`,
      );
    }
    const coverage = { answered: predictions.length, sampled: sample.length };
    const summary = JSON.stringify({ ...summarize(result), coverage, rule: d.rule });
    const description =
      `Human evaluation campaign "${c.name}": ${coverage.answered} of ${coverage.sampled} sampled items answered by ` +
      `${annotators.length} annotator(s), ${c.overlap} per item; ${d.rule === 'majority' ? 'the majority answer' : "the first annotator's answer"} per item.`;
    const files = [
      {
        name: `${task.name}.jsonl`,
        content: predictions
          .map(([i, v]) => JSON.stringify({ [task.idField]: i, [task.goldField]: v }))
          .join('\n'),
      },
    ];
    const hash = createHash('sha256')
      .update(files[0]?.content ?? '')
      .digest('hex');
    if (c.submission_id && (await q.getSubmission(this.d.db, c.submission_id))) {
      await q.updateResults(this.d.db, [
        {
          id: c.submission_id,
          result: JSON.stringify(result),
          summary,
          overall: null,
          status: 'scored',
          released: null,
          ladder_improved: null,
          // A campaign answers a sample of the items: it takes no part in the board's rank intervals.
          item_stats: null,
        },
      ]);
      await q.updateSubmission(this.d.db, c.submission_id, { description }, 'admin', 'campaign-republish');
      this.d.boards.invalidate();
      return c.submission_id;
    }
    const submissionId = randomUUID();
    await q.insertSubmission(
      this.d.db,
      {
        id: submissionId,
        created_at: new Date().toISOString(),
        board,
        status: 'scored',
        model: `Human: ${c.name}`,
        team: 'human evaluation',
        description,
        link: null,
        kind: 'human',
        params: null,
        open_weights: 0,
        token_id: null,
        address: `campaign:${c.id}`,
        source: 'campaign',
        content_hash: hash,
        duplicate_of: null,
        idempotency_key: null,
        result: JSON.stringify(result),
        summary,
        overall: null,
        response: '{}',
        files: JSON.stringify(files.map((f) => ({ name: f.name, chars: f.content.length }))),
      },
      files,
    );
    await q.updateCampaign(this.d.db, id, { submission_id: submissionId }, 'campaign-publish');
    this.d.boards.invalidate();
    return submissionId;
  }
}
