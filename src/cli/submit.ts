/** `rumedbench submit PATH --server URL`: a run, predictions folder or zip sent to a leaderboard (src/submit/). */
import { renderTable } from '../report/table.js';
import type { SubmissionIssue } from '../scoring/issues.js';
import { type SubmitAnswer, SubmitUnreachableError, submitRun } from '../submit/client.js';
import { reportIssues } from './eval.js';
import type { FlagsOf, FlagTable } from './flags.js';
import * as flag from './flags.js';
import { type CliIo, EXIT } from './io.js';

export const SUBMIT_FLAGS = {
  server: flag.text('--server <url>', 'the leaderboard, e.g. https://board.example.org', { required: true }),
  tokenEnv: flag.text('--token-env <name>', 'environment variable holding the team token', {
    default: 'RUMEDBENCH_TOKEN',
  }),
  model: flag.text('--model <name>', "model name (default: the run's model)"),
  kind: flag.choice(
    '--kind <kind>',
    "kind of system (default: from the run's summary; without one, unknown)",
    ['LLM', 'encoder', 'feature-based', 'baseline', 'unknown'],
  ),
  team: flag.text('--team <team>', 'team (a team token names its own team)'),
  description: flag.text('--description <text>', "description (default: the run's settings)"),
  link: flag.text('--link <url>', 'paper, model card or code'),
  board: flag.choice('--board <board>', 'which board the files are for', ['auto', 'public', 'closed'], {
    default: 'auto',
  }),
  maxIssues: flag.count('--max-issues <n>', 'problems printed per kind', { min: 0, default: 20 }),
  json: flag.jsonFlag("print the server's answer as one JSON object"),
  data: flag.dataFlag(),
  proxy: flag.proxyFlag(),
} satisfies FlagTable;
export type SubmitFlags = FlagsOf<typeof SUBMIT_FLAGS>;

/** 0 scored or accepted (a closed test waits for its gold), 1 refused, 2 unreachable. */
export function exitOf(answer: SubmitAnswer): number {
  return answer.status >= 200 && answer.status < 300 ? EXIT.ok : EXIT.submissionErrors;
}

export async function runSubmit(path: string, flags: SubmitFlags, io: CliIo): Promise<number> {
  const token = process.env[flags.tokenEnv] || undefined;
  if (!token) io.log.warn(`${flags.tokenEnv} is not set: the upload goes in anonymously, under no team`);
  let answer: SubmitAnswer;
  try {
    answer = await submitRun(path, {
      server: flags.server,
      board: flags.board,
      log: io.log,
      ...(token ? { token } : {}),
      ...(flags.model !== undefined ? { model: flags.model } : {}),
      ...(flags.kind !== undefined ? { kind: flags.kind } : {}),
      ...(flags.team !== undefined ? { team: flags.team } : {}),
      ...(flags.description !== undefined ? { description: flags.description } : {}),
      ...(flags.link !== undefined ? { link: flags.link } : {}),
      ...(flags.data !== undefined ? { dataDir: flags.data } : {}),
    });
  } catch (e) {
    if (!(e instanceof SubmitUnreachableError)) throw e;
    io.log.error(e.message);
    return EXIT.usage;
  }
  if (flags.json) io.out(`${JSON.stringify(answer.body)}\n`);
  else printAnswer(answer, io);
  const b = answer.body;
  if (answer.status >= 300) {
    reportIssues(io, (b.errors as SubmissionIssue[] | undefined) ?? [], [], flags.maxIssues);
    if (!Array.isArray(b.errors) || b.errors.length === 0)
      io.log.error(
        `the leaderboard refused the upload (${answer.status}): ${String(b.error ?? '')}${Array.isArray(b.problems) ? ` ${b.problems.join('; ')}` : ''}`,
      );
  }
  return exitOf(answer);
}

function printAnswer(answer: SubmitAnswer, io: CliIo): void {
  const b = answer.body;
  if (answer.status >= 300) return;
  const replay = answer.replayed ? ' (the same upload was already there; nothing new was stored)' : '';
  io.out(`${String(b.status)} on the ${String(b.board)} board: ${String(b.id)}${replay}\n`);
  if (answer.url) io.out(`${answer.url}\n`);
  const tasks = ((
    b.result as { tasks?: Record<string, { score: number; metrics: Record<string, number> }> } | undefined
  )?.tasks ?? {}) as Record<string, { score: number; metrics: Record<string, number> }>;
  const rows = Object.entries(tasks).map(([t, v]) => [
    t,
    v.score.toFixed(2),
    Object.entries(v.metrics)
      .map(([m, x]) => `${m} ${x.toFixed(2)}`)
      .join(', '),
  ]);
  if (rows.length > 0) io.out(`\n${renderTable(['task', 'score', 'metrics'], rows, 1)}\n`);
  // Scores on hidden gold come as the Ladder released them: the closed overall, or (public board) the released
  // score of the tasks named, with the six-task overall made with it.
  const ladder = (b.ladder ?? undefined) as
    | { improved?: unknown; tasks?: unknown; released?: unknown }
    | undefined;
  const how = ladder
    ? ` (released by the Ladder: ${ladder.improved === true ? 'a new best' : "the team's best so far"})`
    : '';
  if (ladder && Array.isArray(ladder.tasks) && typeof ladder.released === 'number')
    io.out(`${ladder.tasks.map(String).join(', ')} ${ladder.released.toFixed(2)}${how}\n`);
  const closedLadder = ladder !== undefined && !Array.isArray(ladder.tasks);
  if (typeof b.overall === 'number') io.out(`overall ${b.overall.toFixed(2)}${closedLadder ? how : ''}\n`);
  const six = (b.result as { overall_six?: { score?: unknown } } | undefined)?.overall_six?.score;
  if (typeof six === 'number')
    io.out(`overall of six tasks (MedBench's, with ECG2Pathology) ${six.toFixed(2)}\n`);
}
