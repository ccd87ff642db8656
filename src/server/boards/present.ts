/** A board as data for export: the board's name from a path, its CSV, and an entry as the JSON API shows it. */
import { rankInterval } from '../../report/format.js';
import { getTask } from '../../tasks/registry.js';
import type { BoardName } from '../db/schema.js';
import { HttpError } from '../errors.js';
import { HELD_GOLD_AFTER_UPLOAD } from '../gold/release.js';
import { BOARD_TASKS, SIX_TASK_OVERALL } from '../score-upload.js';
import type { Entry } from './entries.js';
import type { RankingState } from './service.js';

const BOARDS: readonly BoardName[] = ['public', 'closed'];

export function parseBoard(name: string | undefined): BoardName {
  if (name === 'public' || name === 'closed') return name;
  throw new HttpError(404, 'NOT_FOUND', `no board "${name ?? ''}"; boards: ${BOARDS.join(', ')}`);
}

/** RFC 4180 quoting, and a leading quote before =, +, - and @ so that a spreadsheet never runs a cell. */
export function csvCell(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  // Quoted when it holds either separator a spreadsheet may pick (a comma, or the semicolon of Russian locales).
  return /[",;\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export function boardCsv(board: BoardName, entries: readonly Entry[]): string {
  return [...boardCsvChunks(board, entries)].join('');
}

/** Rows of the CSV written at a time by `boardCsvChunks`. */
const CSV_CHUNK = 250;

/** The CSV a few hundred rows at a time (the header first), for an answer streamed as it is read. */
export function* boardCsvChunks(board: BoardName, entries: readonly Entry[]): Generator<string> {
  const tasks = BOARD_TASKS[board];
  // MedBench's six-task overall, where the board has ECG2Pathology beside the five public tasks.
  const six = board === 'public' && SIX_TASK_OVERALL.every((t) => tasks.includes(t));
  const header = [
    'rank',
    'id',
    'model',
    'team',
    'kind',
    'params',
    'open_weights',
    'verified',
    'submitted',
    ...tasks.flatMap((t) => getTask(t).metrics.map((m) => `${t}.${m}`)),
    ...tasks.map((t) => `${t}.score`),
    'overall',
    'overall.rank_ci',
    'overall.group',
    ...(six ? ['overall_six'] : []),
    // What the run spent, as its upload reported it (empty where it reported nothing).
    'cost_usd',
    'prompt_tokens',
    'completion_tokens',
    'reasoning_tokens',
    'batch',
  ];
  const row = (e: Entry, i: number) => [
    e.overall !== null ? String(i + 1) : '',
    e.id,
    e.model,
    e.team,
    e.kind,
    e.params ?? '',
    String(e.open_weights),
    String(e.verified),
    e.created_at,
    ...tasks.flatMap((t) => getTask(t).metrics.map((m) => e.tasks[t]?.metrics[m]?.toFixed(4) ?? '')),
    ...tasks.map((t) => e.tasks[t]?.score.toFixed(4) ?? ''),
    e.overall?.toFixed(4) ?? '',
    e.place ? rankInterval(e.place.rank_ci) : '',
    e.place?.group ?? '',
    ...(six ? [e.overall_six?.toFixed(4) ?? ''] : []),
    e.usage?.cost_usd !== undefined ? String(e.usage.cost_usd) : '',
    e.usage ? String(e.usage.prompt_tokens) : '',
    e.usage ? String(e.usage.completion_tokens) : '',
    e.usage?.reasoning_tokens !== undefined ? String(e.usage.reasoning_tokens) : '',
    e.usage ? String(e.usage.batch === true) : '',
  ];
  const line = (r: string[]) => `${r.map(csvCell).join(',')}\r\n`;
  yield line(header);
  for (let i = 0; i < entries.length; i += CSV_CHUNK)
    yield entries
      .slice(i, i + CSV_CHUNK)
      .map((e, j) => line(row(e, i + j)))
      .join('');
}

/** A board entry as the JSON export and the API show it: metadata and aggregate scores, no internals. */
export function publicEntry(e: Entry) {
  return {
    id: e.id,
    created_at: e.created_at,
    board: e.board,
    model: e.model,
    team: e.team,
    description: e.description,
    link: e.link,
    kind: e.kind,
    params: e.params,
    open_weights: e.open_weights,
    verified: e.verified,
    flagged: e.flagged,
    duplicate_of: e.duplicate_of,
    overall: e.overall,
    overall_ci: e.overall_ci,
    // MedBench's overall over six tasks (with ECG2Pathology, as released by the Ladder where it is); null: not all six.
    overall_six: e.overall_six,
    // Scores on hidden gold are released by the Ladder (their cells say `released`).
    ladder: e.ladder === true,
    // The overall's rank among the ranked entries, its 95% interval and group letters (null: not ranked).
    rank: e.place?.rank ?? null,
    rank_ci: e.place?.rank_ci ?? null,
    group: e.place?.group ?? null,
    tasks: Object.fromEntries(
      Object.entries(e.tasks).map(([name, { place, ...cell }]) => [
        name,
        { ...cell, rank: place?.rank ?? null, rank_ci: place?.rank_ci ?? null, group: place?.group ?? null },
      ]),
    ),
    // How the platform ran it (its own evaluations), without the manifest's internals; what its run's checks said.
    run_by_platform: e.platform_run
      ? {
          plan_id: e.platform_run.plan_id,
          settings: e.platform_run.settings,
          prompt_versions: e.platform_run.prompt_versions,
        }
      : null,
    trust: e.trust,
    // What the run spent, as its upload reported it (tokens; cost_usd where the run was priced); null: not reported.
    usage: e.usage,
    // Task files stored before the board held their hidden gold, never scored on it (gold/release.ts): upload again.
    set_aside: (e.result?.warnings ?? [])
      .filter((w) => w.code === HELD_GOLD_AFTER_UPLOAD)
      .map((w) => ({ task: w.task ?? null, file: w.file, message: w.message })),
  };
}

/** What the API says of a board's ranking as a whole: how it was made, whether it is current, each task's MDE. */
export function rankingSummary(state: RankingState) {
  const r = state.ranking;
  return {
    status: state.error ? 'failed' : r === null ? 'computing' : state.current ? 'current' : 'updating',
    computed_at: state.computed_at,
    method:
      'rank: 1 + entries with a higher score; rank_ci: 95% interval of the rank over paired bootstrap replicates of the items (clusters); group: entries sharing a letter are not distinguishable (Holm-corrected paired tests, alpha 0.05); mde: the smallest difference in points a paired comparison detects with 80% power at alpha 0.05',
    resamples: r?.resamples ?? null,
    alpha: r?.alpha ?? null,
    mde: r
      ? {
          ...Object.fromEntries(Object.entries(r.tasks).map(([t, x]) => [t, x.mde])),
          overall: r.overall?.mde ?? null,
        }
      : null,
  };
}
