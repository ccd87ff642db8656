/**
 * `rumedbench rank A B C …`: which systems are really different on these test sets. A table per task and overall
 * (score ± standard error, rank with its 95% interval, group letters), the pairs that differ after Holm's
 * correction, and each task's minimum detectable effect; `--json` gives all of it (scoring/rank.ts).
 */
import { UsageError } from '../errors.js';
import type { TaskRanking } from '../metrics/ranking.js';
import { f2, rankInterval } from '../report/format.js';
import { OVERALL_TASKS, parseTaskList } from '../tasks/registry.js';
import { renderTable } from '../text-table.js';
import { reportIssues, SCORING_FLAGS } from './eval.js';
import type { FlagsOf, FlagTable } from './flags.js';
import * as flag from './flags.js';
import { type CliIo, EXIT } from './io.js';

export const RANK_FLAGS = {
  ...SCORING_FLAGS,
  names: flag.text(
    '--names <list>',
    'comma-separated names of the systems, in the order given (default: the paths)',
  ),
  tasks: flag.tasksFlag(),
  alpha: flag.decimal('--alpha <a>', 'level of the pairwise tests and the groups', { default: 0.05 }),
} satisfies FlagTable;
export type RankFlags = FlagsOf<typeof RANK_FLAGS>;

const rankText = (r: { rank: number; rank_ci: [number, number] }) => `${r.rank} (${rankInterval(r.rank_ci)})`;

function renderRanking(
  title: string,
  t: Omit<TaskRanking, 'n' | 'clusters'> & Partial<TaskRanking>,
  alpha: number,
) {
  const head = [
    title,
    t.n !== undefined ? `n ${t.n}${t.clusters ? ` in ${t.clusters} clusters` : ''}` : '',
    t.mde !== null && t.mde !== undefined ? `detectable difference ≈ ${f2(t.mde)} points` : '',
  ]
    .filter((x) => x !== '')
    .join(' · ');
  const rows = [...t.systems]
    .sort((a, b) => b.score - a.score)
    .map((s) => [s.name, `${f2(s.score)} ± ${f2(s.se)}`, rankText(s), s.group]);
  const differ = t.pairs
    .filter((p) => p.p_holm < alpha)
    .map(
      (p) =>
        `  ${p.b} − ${p.a}: ${p.diff >= 0 ? '+' : ''}${f2(p.diff)} [${f2(p.ci[0])}, ${f2(p.ci[1])}], p ${p.p_holm < 0.0001 ? '< 0.0001' : p.p_holm.toFixed(4)} (Holm; ${p.test})`,
    );
  return [
    head,
    renderTable(['system', 'score ± SE', 'rank (95% interval)', 'group'], rows, 2),
    differ.length > 0 ? `differ at α ${alpha}:\n${differ.join('\n')}` : `no pair differs at α ${alpha}`,
  ].join('\n');
}

export async function runRank(paths: readonly string[], flags: RankFlags, io: CliIo): Promise<number> {
  if (paths.length < 2) throw new UsageError('rank needs at least two submissions to rank');
  const names = flags.names?.split(',').map((n) => n.trim());
  if (names && names.length !== paths.length)
    throw new UsageError(`--names: ${names.length} name(s) for ${paths.length} submission(s)`);
  if (names && new Set(names).size !== names.length) throw new UsageError('--names: each name once');
  if (!(flags.alpha > 0 && flags.alpha < 1))
    throw new UsageError('--alpha: a level between 0 and 1, e.g. 0.05');
  const { rankSubmissions } = await import('../scoring/rank.js');
  const result = await rankSubmissions(paths, {
    split: flags.split,
    bootstrap: flags.bootstrap,
    seed: flags.seed,
    alpha: flags.alpha,
    ...(flags.data !== undefined ? { dataDir: flags.data } : {}),
    ...(flags.fileGold ? { fileGold: true } : {}),
    ...(flags.gold !== undefined ? { goldDir: flags.gold } : {}),
    ...(names ? { names } : {}),
    ...(flags.tasks ? { tasks: parseTaskList(flags.tasks).map((t) => t.name) } : {}),
  });
  if (flags.json) io.out(`${JSON.stringify(result)}\n`);
  else {
    const parts = Object.entries(result.tasks).map(([task, t]) => renderRanking(task, t, flags.alpha));
    if (result.overall) parts.push(renderRanking('Overall', result.overall, flags.alpha));
    else {
      // An overall task left out (its files named in the warnings below) takes the overall with it: say so.
      const left = result.unranked.map((u) => u.task).filter((t) => OVERALL_TASKS.some((o) => o.name === t));
      if (left.length > 0)
        parts.push(
          `Overall: not ranked, as ${left.join(', ')} is not (the files that differ are named below)`,
        );
    }
    if (parts.length > 0)
      io.out(
        `${parts.join('\n\n')}\n\nSystems sharing a letter are not distinguishable on these items; ranks in brackets are 95% intervals.\n`,
      );
  }
  reportIssues(io, result.errors, result.warnings, flags.maxIssues);
  if (Object.keys(result.tasks).length === 0) {
    io.log.error('nothing ranked: no task is answered on the same items by every submission');
    return EXIT.submissionErrors;
  }
  return result.errors.length > 0 ? EXIT.submissionErrors : EXIT.ok;
}
