/** A board as data for export: the board's name from a path, its CSV, and an entry as the JSON API shows it. */
import { getTask } from '../../tasks/registry.js';
import type { BoardName } from '../db/schema.js';
import { HttpError } from '../errors.js';
import { BOARD_TASKS } from '../score-upload.js';
import type { Entry } from './entries.js';

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

export function boardCsv(board: BoardName, entries: Entry[]): string {
  const tasks = BOARD_TASKS[board];
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
  ];
  const rows = entries.map((e, i) => [
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
  ]);
  return `${[header, ...rows].map((r) => r.map(csvCell).join(',')).join('\r\n')}\r\n`;
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
    tasks: e.tasks,
    // How the platform ran it (its own evaluations), without the manifest's internals; what its run's checks said.
    run_by_platform: e.platform_run
      ? {
          plan_id: e.platform_run.plan_id,
          settings: e.platform_run.settings,
          prompt_versions: e.platform_run.prompt_versions,
        }
      : null,
    trust: e.trust,
  };
}
