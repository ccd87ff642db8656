/**
 * `rumedbench tasks` (what tasks there are, and where each is defined) and `rumedbench tasks check FILE…` (each
 * definition and its data; with `--gold DIR`, data whose gold is held apart in DIR).
 */
import { realpathSync } from 'node:fs';
import { join, relative } from 'node:path';
import { loadSplit } from '../data/load.js';
import { resolveDataDir, splitPath } from '../data/paths.js';
import { TextEncodingError } from '../data/text.js';
import { DataInvalidError, DataNotFoundError, TaskDefinitionError, UsageError } from '../errors.js';
import type { GoldOverrides } from '../scoring/reference.js';
import { loadTaskFile } from '../tasks/definition-file.js';
import {
  BUILTIN_NAMES,
  BUILTIN_TASKS,
  builtinFile,
  definitionFileOf,
  getTask,
  isTaskName,
  parseTaskList,
  shippedFile,
  shippedTasks,
  TASKS,
} from '../tasks/registry.js';
import type { Split, TaskDefinition } from '../tasks/types.js';
import { definitionFiles } from '../tasks/user.js';
import { renderTable } from '../text-table.js';
import type { FlagsOf, FlagTable } from './flags.js';
import * as flag from './flags.js';
import { type CliIo, EXIT } from './io.js';

export const TASKS_FLAGS = { json: flag.jsonFlag() } satisfies FlagTable;
export const TASKS_EXPORT_FLAGS = {
  format: flag.choice('--format <format>', 'what to write the tasks as', ['lm-eval'] as const, {
    default: 'lm-eval',
  }),
  out: flag.text('--out <dir>', 'folder to write the task files to', { required: true }),
  tasks: flag.tasksFlag(),
  data: flag.dataFlag(),
  json: flag.jsonFlag(),
} satisfies FlagTable;
export const TASKS_CHECK_FLAGS = {
  data: flag.dataFlag(),
  gold: flag.text(
    '--gold <dir>',
    'the gold is held apart in this folder (<Task>.jsonl), as for eval --gold: the data files need not carry it',
  ),
  json: flag.jsonFlag(),
} satisfies FlagTable;

const sourceOf = (t: TaskDefinition): string =>
  t.source === undefined
    ? `built in (${definitionFileOf(t)})`
    : t.optional || shippedFile(t.name) === t.source
      ? `shipped (${t.source})`
      : relative(process.cwd(), t.source);

const kindOf = (t: TaskDefinition): string =>
  t.kind === 'classification' && t.choices ? 'multiple choice' : t.kind;

export function runTasks(flags: FlagsOf<typeof TASKS_FLAGS>, io: CliIo): number {
  // A shipped task named with --tasks-dir is among TASKS already: listed once.
  const tasks = [...TASKS, ...shippedTasks().filter((t) => !TASKS.some((u) => u.name === t.name))];
  if (flags.json) {
    io.out(
      `${JSON.stringify(
        tasks.map((t) => ({
          name: t.name,
          kind: t.kind,
          metrics: t.metrics,
          splits: t.splits,
          title: t.title,
          source: t.source ?? null,
          definition: definitionFileOf(t) ?? null,
          in_overall: t.inOverall,
        })),
      )}\n`,
    );
    return EXIT.ok;
  }
  const rows = tasks.map((t) => [
    t.name,
    kindOf(t),
    t.metrics.join(', '),
    t.splits.join(', '),
    sourceOf(t),
    t.title,
  ]);
  io.out(`${renderTable(['task', 'kind', 'metrics', 'splits', 'source', 'what'], rows, 6)}\n`);
  return EXIT.ok;
}

interface CheckResult {
  file: string;
  task?: string;
  ok: boolean;
  problems: string[];
  /** Items per split whose data file was read and is valid. */
  items: Partial<Record<Split, number>>;
}

/** A file's path with links resolved; as given where it cannot be (loading it then says why). */
function realPath(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return file;
  }
}

/** Reads one definition; its problems (schema, encoding, a built-in task's name) are collected. */
function compileOne(file: string): { out: CheckResult; task?: TaskDefinition } {
  const out: CheckResult = { file, ok: false, problems: [], items: {} };
  // A built-in task's own file (the package's tasks/RuMedDaNet.json) is checked as the built-in task it is; a
  // package reached through a link (npm link, pnpm) is the same file.
  const real = realPath(file);
  const builtin = BUILTIN_NAMES.some((n) => realPath(builtinFile(n)) === real);
  let task: TaskDefinition;
  try {
    task = loadTaskFile(file, { builtin });
  } catch (e) {
    if (e instanceof TaskDefinitionError) out.problems.push(...e.problems);
    // Not UTF-8 (a definition saved in Windows-1251): one problem of this file; the others are still checked.
    else if (e instanceof TextEncodingError) out.problems.push(e.message);
    else throw e;
    return { out };
  }
  out.task = task.name;
  if (
    !builtin &&
    realPath(shippedFile(task.name) ?? '') !== real &&
    (BUILTIN_TASKS.some((t) => t.name === task.name) ||
      (isTaskName(task.name) && !TASKS.some((t) => t.source === task.source)))
  )
    out.problems.push(
      `${file}: name: "${task.name}" is the name of a built-in task; give yours another name`,
    );
  return { out, task };
}

const MAX_SHOWN = 20;

/**
 * Checks the data files a definition names; every problem is collected. With gold held apart (`gold`, read from
 * `--gold DIR`), the data need not carry it, and every record without gold in its data must have it there.
 */
async function checkData(
  out: CheckResult,
  task: TaskDefinition,
  dataDir: string,
  gold: { dir: string; byTask: GoldOverrides } | undefined,
): Promise<void> {
  for (const split of task.splits) {
    if (!task.files?.[split]) continue;
    try {
      const records = await loadSplit(task, split, { dataDir, goldApart: gold !== undefined });
      out.items[split] = records.length;
      if (!gold) continue;
      const held = gold.byTask[task.name];
      const missing = records.filter((r) => r.gold === undefined && !held?.has(r.id));
      const goldFile = join(gold.dir, `${task.name}.jsonl`);
      out.problems.push(
        ...missing
          .slice(0, MAX_SHOWN)
          .map(
            (r) =>
              `${goldFile}: no gold for id ${r.id} (${split} record, ${splitPath(dataDir, task, split)}:${r.line}, which has none)`,
          ),
        ...(missing.length > MAX_SHOWN
          ? [`… and ${missing.length - MAX_SHOWN} more ${split} records without gold`]
          : []),
      );
    } catch (e) {
      if (e instanceof DataInvalidError)
        out.problems.push(
          ...e.issues
            .slice(0, MAX_SHOWN)
            .map(
              (i) => `${i.file}:${i.line ?? ''}${i.id !== undefined ? ` (id ${i.id})` : ''}: ${i.message}`,
            ),
          ...(e.issues.length > MAX_SHOWN
            ? [`… and ${e.issues.length - MAX_SHOWN} more in ${task.name}'s ${split} file`]
            : []),
        );
      else if (e instanceof DataNotFoundError)
        out.problems.push(`${splitPath(dataDir, task, split)}: not found (files.${split} of ${out.file})`);
      else if (e instanceof TextEncodingError) out.problems.push(e.message);
      else throw e;
    }
  }
}

export async function runTasksCheck(
  paths: readonly string[],
  flags: FlagsOf<typeof TASKS_CHECK_FLAGS>,
  io: CliIo,
): Promise<number> {
  if (paths.length === 0) throw new UsageError('tasks check: name at least one definition file or folder');
  const dataDir = resolveDataDir(flags.data);
  const compiled = paths.flatMap(definitionFiles).map(compileOne);
  // The gold folder is read as eval reads it, its files named by the tasks checked here (or known ones).
  let gold: { dir: string; byTask: GoldOverrides } | undefined;
  if (flags.gold !== undefined) {
    const { readGoldDir } = await import('../scoring/gold-dir.js');
    const byName = new Map(compiled.flatMap((c) => (c.task ? [[c.task.name, c.task] as const] : [])));
    const byTask = await readGoldDir(
      flags.gold,
      (name) => byName.get(name) ?? (isTaskName(name) ? getTask(name) : undefined),
    );
    gold = { dir: flags.gold, byTask };
  }
  const results: CheckResult[] = [];
  for (const { out, task } of compiled) {
    if (task) await checkData(out, task, dataDir, gold);
    out.ok = out.problems.length === 0;
    results.push(out);
  }
  if (flags.json) io.out(`${JSON.stringify(results)}\n`);
  else
    for (const r of results) {
      if (r.ok) {
        const counts = Object.entries(r.items).map(([s, n]) => `${s} ${n}`);
        io.out(`${r.file}: ${r.task} is valid${counts.length > 0 ? ` (${counts.join(', ')} items)` : ''}\n`);
      } else for (const p of r.problems) io.log.error(p);
    }
  return results.every((r) => r.ok) ? EXIT.ok : EXIT.submissionErrors;
}

/**
 * `rumedbench tasks export --format lm-eval --out DIR`: the tasks as lm-evaluation-harness tasks that read the
 * user's data folder (src/data/lm-eval-export.ts).
 */
export async function runTasksExport(flags: FlagsOf<typeof TASKS_EXPORT_FLAGS>, io: CliIo): Promise<number> {
  const { exportLmEval } = await import('../data/lm-eval-export.js');
  const result = await exportLmEval(parseTaskList(flags.tasks), {
    out: flags.out,
    dataDir: resolveDataDir(flags.data),
  });
  if (flags.json)
    io.out(
      `${JSON.stringify({
        dir: result.dir,
        tasks: result.tasks.map(({ yaml: _, ...t }) => t),
        skipped: result.skipped,
      })}\n`,
    );
  else {
    for (const t of result.tasks)
      io.out(`${t.task}: ${join(result.dir, `${t.lmEvalTask}.yaml`)} (${t.split}: ${t.dataFile})\n`);
    io.out(
      `lm_eval --include_path ${result.dir} --tasks rumedbench --log_samples --output_path OUT … ; then rumedbench eval OUT\n` +
        '(the generation prompts: --tasks rumedbench_gen --apply_chat_template, with a chat endpoint)\n',
    );
  }
  for (const [task, why] of Object.entries(result.skipped)) io.log.warn(`${task}: not exported: ${why}`);
  return EXIT.ok;
}
