/**
 * Evaluations the platform runs itself: a registered model (the allow-list, `serve endpoint add`) on the board's
 * tests with the board's fixed settings, queued for the workers (src/workers/) by the admin, or requested by a team
 * and held until the admin approves. A finished evaluation enters its board as an upload would, verified and marked
 * as the platform's, with its settings, prompt versions and manifest; its items and replies stay in the database.
 */
import { basename } from 'node:path';
import { isProviderName, providerRecord, recordOf } from '../../engine/providers/registry.js';
import { type LlmSpec, makeRunSpec, RUN_SPEC_SCHEMA } from '../../engine/spec.js';
import type { Logger } from '../../log.js';
import { llmDetailsOf, parseManifest } from '../../scoring/run-log.js';
import { runUsageOf } from '../../scoring/run-usage.js';
import { getTask } from '../../tasks/registry.js';
import { type Endpoint, getEndpoint, listEndpoints } from '../../workers/endpoints.js';
import {
  cellFiles,
  evaluationMeta,
  listPlans,
  type PlanStatus,
  planCells,
  planStatus,
  setPlanMeta,
  unsettledEvaluations,
} from '../../workers/plans.js';
import { DEFAULT_JOB_SIZE, type QueueDb } from '../../workers/store.js';
import { enqueuePlan, rejectPlan, releasePlan } from '../../workers/submit.js';
import type { PlatformRun } from '../boards/entries.js';
import type { BoardName } from '../db/schema.js';
import { HttpError } from '../errors.js';
import { BOARD_SPLIT, runnableTasks } from '../score-upload.js';
import type { Uploads } from '../submissions/service.js';

/** The settings every platform evaluation runs with: one board, one way of asking. */
export const PLATFORM_SETTINGS = {
  mode: 'generate',
  temperature: 0,
  max_tokens: 512,
  shots: 0,
  seed: 0,
  concurrency: 8,
} as const;

export type EvaluationBoards = BoardName | 'both';

/** Runs a page of /runs shows; older ones are a link away (`?before=`). */
export const RUNS_PAGE = 50;

interface EvaluationMeta {
  endpoint: string;
  boards: BoardName[];
  /** Whom the entries are credited to: the endpoint's owner team, else the platform; never whoever asked. */
  team: string;
  requested_by: 'admin' | 'team';
  /** The team whose token asked (a team's request), shown to the admin who approves or rejects it. */
  requesting_team?: string;
  /** Board entries made from the finished cells, per board. */
  imported?: Partial<Record<BoardName, string>>;
  /** Every finished cell imported: the plan is not read again. */
  settled?: true;
}

/** The run spec of the board's fixed settings, against a registered endpoint. */
function evaluationSpec(e: Endpoint, board: BoardName): LlmSpec {
  const s = PLATFORM_SETTINGS;
  return makeRunSpec(
    {
      schema: RUN_SPEC_SCHEMA,
      kind: 'llm',
      // A registered endpoint's row, in its provider's spec fields (a local model's row has no server, no key).
      provider: {
        name: e.provider,
        model: e.model,
        ...(e.base_url !== null ? { base_url: e.base_url } : {}),
        ...(e.api_key_env ? { api_key_env: e.api_key_env } : {}),
      },
      tasks: runnableTasks(board),
      split: BOARD_SPLIT[board],
      mode: s.mode,
      temperature: s.temperature,
      max_tokens: s.max_tokens,
      shots: s.shots,
      seed: s.seed,
      concurrency: s.concurrency,
      bootstrap: 0,
    },
    `evaluation of ${e.name}`,
  ) as LlmSpec;
}

/** A platform run's spec as its board entry shows it: the model's name, not where it is served or its key's name. */
function publicSpec(spec: unknown): unknown {
  if (!spec || typeof spec !== 'object') return undefined;
  const { provider, data: _d, ...rest } = spec as Record<string, unknown>;
  const p = (provider ?? {}) as Record<string, unknown>;
  // A local model's "model" is a path on the workers' disks: not shown.
  const local = isProviderName(p.name) && providerRecord(p.name).local;
  return { ...rest, provider: { name: p.name, model: local ? undefined : p.model } };
}

export class Runs {
  constructor(
    private readonly lb: { uploads: Pick<Uploads, 'recordPlatformRun'> },
    readonly queue: QueueDb | undefined,
    private readonly log: Logger,
  ) {}

  private need(): QueueDb {
    if (!this.queue)
      throw new HttpError(
        409,
        'RUNS_UNAVAILABLE',
        'runs need the leaderboard on PostgreSQL (serve --db postgres://…)',
      );
    return this.queue;
  }

  endpoints(): Promise<Endpoint[]> {
    return listEndpoints(this.need());
  }

  /**
   * Queues an evaluation of a registered endpoint (by name: an address is never taken from a request). A team's
   * request waits for the admin's approval.
   */
  async queueEvaluation(input: {
    endpoint: unknown;
    boards: unknown;
    team?: string;
    by: 'admin' | 'team';
  }): Promise<{ id: string; status: 'queued' | 'pending' }> {
    const db = this.need();
    if (typeof input.endpoint !== 'string' || input.endpoint.length > 64)
      throw new HttpError(
        400,
        'BAD_EVALUATION',
        'endpoint: the name of a registered model (serve endpoint list)',
      );
    const boards: BoardName[] =
      input.boards === 'both'
        ? ['closed', 'public']
        : input.boards === 'public'
          ? ['public']
          : input.boards === 'closed' || input.boards === undefined
            ? ['closed']
            : [];
    if (boards.length === 0) throw new HttpError(400, 'BAD_EVALUATION', 'boards: closed, public or both');
    const e = await getEndpoint(db, input.endpoint);
    if (!e)
      throw new HttpError(
        400,
        'ENDPOINT_NOT_ALLOWED',
        `no registered model "${input.endpoint}": the admin registers what the platform may ask (serve endpoint add)`,
      );
    // Entries are credited to the model's owner (as registered), whoever asked: a team asking for an evaluation
    // of another team's model gets no entry under its own name.
    const meta: EvaluationMeta = {
      endpoint: e.name,
      boards,
      team: e.team ?? 'platform',
      requested_by: input.by,
      ...(input.by === 'team' && input.team !== undefined ? { requesting_team: input.team } : {}),
    };
    const r = await enqueuePlan(db, {
      name: `${e.name} · ${boards.join(' + ')}`,
      file: `platform:${e.name}`,
      sha256: '',
      maxInFlight: 32,
      cells: boards.map((board) => {
        const spec = evaluationSpec(e, board);
        return {
          cell: {
            id: `${e.name}/${board}`,
            model: e.name,
            provider: e.provider,
            axes: { board },
            settings: { ...PLATFORM_SETTINGS, board },
            spec,
            endpoint: recordOf(spec.provider).endpoint(spec.provider),
            inFlight: PLATFORM_SETTINGS.concurrency,
          },
          keys: null,
          dataSha256: {},
        };
      }),
      jobSize: DEFAULT_JOB_SIZE,
      kind: 'evaluation',
      meta: meta as unknown as Record<string, unknown>,
      hold: input.by === 'team',
    });
    this.log.info(
      `evaluation ${r.id} of ${e.name} on ${boards.join(', ')}: ${input.by === 'team' ? 'waiting for approval' : 'queued'}`,
    );
    return { id: r.id, status: input.by === 'team' ? 'pending' : 'queued' };
  }

  async approve(id: string): Promise<boolean> {
    return releasePlan(this.need(), id);
  }

  async reject(id: string): Promise<boolean> {
    const ok = await rejectPlan(this.need(), id);
    if (ok) this.log.info(`evaluation ${id}: rejected`);
    return ok;
  }

  /** A page of runs, newest first: those created before `before` (an ISO time), `RUNS_PAGE` at most. */
  list(before?: string): ReturnType<typeof listPlans> {
    if (before !== undefined && Number.isNaN(Date.parse(before)))
      throw new HttpError(400, 'BAD_REQUEST', 'before: an ISO time (the created_at of the last run shown)');
    return listPlans(this.need(), { limit: RUNS_PAGE, ...(before !== undefined ? { before } : {}) });
  }

  /** Who asked for an evaluation and to whom its entries go (the admin's view of a request). */
  async request(id: string): Promise<{ requested_by: string; credited_to: string } | undefined> {
    const meta = await evaluationMeta(this.need(), id);
    if (!meta) return undefined;
    const m = JSON.parse(meta) as EvaluationMeta;
    return {
      requested_by: m.requested_by === 'team' ? (m.requesting_team ?? 'a team') : 'admin',
      credited_to: m.team,
    };
  }

  async status(id: string): Promise<PlanStatus> {
    if (!/^p-[0-9a-f]{12}$/.test(id)) throw new HttpError(404, 'NOT_FOUND', 'no such run');
    try {
      return await planStatus(this.need(), id);
    } catch (e) {
      if (e instanceof HttpError) throw e;
      throw new HttpError(404, 'NOT_FOUND', 'no such run');
    }
  }

  /** The board entries made from a plan's cells (evaluations only). */
  async entries(id: string): Promise<Partial<Record<BoardName, string>>> {
    const meta = await evaluationMeta(this.need(), id);
    return meta ? ((JSON.parse(meta) as EvaluationMeta).imported ?? {}) : {};
  }

  /** Finished evaluations into their boards (each cell once). Returns how many entries were made. */
  async importFinished(): Promise<number> {
    const db = this.need();
    // Plans whose every finished cell is on its board are not read again at each look.
    const rows = await unsettledEvaluations(db);
    let made = 0;
    for (const p of rows) {
      const meta = JSON.parse(p.meta) as EvaluationMeta;
      for (const c of await planCells(db, p.id)) {
        const board = (JSON.parse(c.settings) as { board: BoardName }).board;
        if (c.status !== 'done' || meta.imported?.[board]) continue;
        const files = await cellFiles(db, p.id, c.cell_id);
        const manifestFile = files.find((f) => f.path === 'manifest.json');
        // Read by the run log's one reader: typed, a field of the wrong type named.
        const read = manifestFile
          ? parseManifest(manifestFile.content.toString('utf8'), `${p.id}/${c.cell_id}/manifest.json`)
          : undefined;
        const manifest: Record<string, unknown> = read ? { ...read.manifest, ...read.extra } : {};
        // The manifest as published: the model server's address and file paths are the platform's own business.
        // The spec and its command line name the server too: the spec is shown without its provider's address.
        const { endpoint: _e, gguf_file: _g, command: _c, spec, ...rest } = manifest;
        const shown = { ...rest, ...(spec ? { spec: publicSpec(spec) } : {}) };
        const run: PlatformRun = {
          plan_id: p.id,
          endpoint: meta.endpoint,
          settings: { ...PLATFORM_SETTINGS, board },
          prompt_versions: Object.fromEntries(
            runnableTasks(board).map((t) => [
              t,
              String(
                (manifest.prompt_versions as Record<string, string> | undefined)?.[t] ??
                  getTask(t).prompt.version,
              ),
            ]),
          ),
          manifest: { ...shown, endpoint: meta.endpoint },
        };
        // What `llm` writes for a board: predictions/<Task>.jsonl (public tests), submission.zip (closed tests).
        const predictions = files.filter(
          (f) => f.path.startsWith('predictions/') && f.path.endsWith('.jsonl'),
        );
        const upload =
          predictions.length > 0 ? predictions : files.filter((f) => f.path === 'submission.zip');
        const summaryFile = files.find((f) => f.path === 'summary.json');
        const details = summaryFile ? llmDetailsOf(summaryFile.content.toString('utf8')) : undefined;
        const answer = await this.lb.uploads.recordPlatformRun({
          usage: details ? (runUsageOf(details) ?? null) : null,
          files: upload.map((f) => ({ name: basename(f.path), data: new Uint8Array(f.content) })),
          board,
          model: String(manifest.model ?? meta.endpoint),
          team: meta.team,
          description: `Run by the platform (${meta.endpoint}).`,
          run,
        });
        meta.imported = { ...meta.imported, [board]: answer.id };
        await setPlanMeta(db, p.id, meta);
        if (answer.status === 'scored')
          this.log.info(`evaluation ${p.id}: ${board} board entry ${answer.id}`);
        else
          this.log.warn(
            `evaluation ${p.id}: its ${board} entry ${answer.id} is ${answer.status}: ${answer.errors.map((e) => e.message).join('; ') || 'waiting for the closed tests’ gold'}`,
          );
        made++;
      }
      meta.settled = true;
      await setPlanMeta(db, p.id, meta);
    }
    return made;
  }
}
