/**
 * Reading an lm-evaluation-harness 0.4.x output folder (`lm_eval --output_path OUT --log_samples`) as a submission:
 * its `samples_<task>_<time>.jsonl` files, each sample mapped to our item by the id in its doc (never by its
 * position), the model's answer the argmax of `filtered_resps` (the best three for a ranking task), `acc_norm`'s
 * choice (each log-likelihood over the candidate's characters, as lm-eval divides) kept apart. Every sample's prompt
 * and candidates are checked against ours (src/tasks/loglik-prompt.ts) before it is read: a task we did not export,
 * or one whose YAML was edited, is refused at its first differing prompt. What is read becomes RuMedBench-format
 * lines, validated and scored as any predictions file is (missing, duplicated and foreign items named there).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { type JsonlLine, parseJsonl } from '../data/jsonl.js';
import { ifPresent, readGoldLabels } from '../data/load.js';
import { resolveDataDir } from '../data/paths.js';
import { loglikContext } from '../tasks/loglik-prompt.js';
import { getTask, isTaskName, TASKS } from '../tasks/registry.js';
import type { PromptContext, TaskDefinition } from '../tasks/types.js';
import type { SubmissionIssue } from './issues.js';
import type { Submission, SubmissionFile } from './submission-types.js';

const RESULTS = /^results_(.+)\.json$/;
const SAMPLES = /^samples_(.+)_(\d{4}-\d{2}-\d{2}T[\d.-]+)\.jsonl$/;

/** The results files of lm-eval runs in a folder or the one model folder below it, or the file itself. */
function resultsFiles(path: string): string[] {
  if (!existsSync(path)) return [];
  if (statSync(path).isFile()) return RESULTS.test(basename(path)) ? [path] : [];
  const here = readdirSync(path).filter((f) => RESULTS.test(f));
  if (here.length > 0) return here.map((f) => join(path, f));
  // lm-eval writes OUT/<model name, sanitized>/results_<time>.json.
  // A folder that cannot be listed is not an lm-eval run (what reads it next says why).
  const list = (dir: string): string[] => {
    try {
      return readdirSync(dir);
    } catch {
      return [];
    }
  };
  return readdirSync(path, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .flatMap((d) =>
      list(join(path, d.name))
        .filter((f) => RESULTS.test(f))
        .map((f) => join(path, d.name, f)),
    );
}

/** Whether a path is an lm-eval output folder (or its results file): read by {@link readLmEval}. */
export const isLmEvalOutput = (path: string): boolean => resultsFiles(path).length > 0;

/** What a run folder made from an lm-eval run records of where it came from. */
export interface LmEvalRunInfo {
  results_file: string;
  lm_eval_version: string | null;
  model: string | null;
  model_args: unknown;
  /** Per lm-eval task: its version, our task, the prompt version and data sha256 its export recorded. */
  tasks: Record<
    string,
    { version: unknown; rumedbench_task: string; prompt_version: string | null; data_sha256: string | null }
  >;
  /** The settings that change what a model is asked: few-shot, chat template, system instruction, limit. */
  settings: Record<string, unknown>;
}

/** One item as lm-eval answered it. */
export interface LmEvalSample {
  task: string;
  split: string;
  id: string;
  prompt: string;
  candidates: { label: string; text: string; logprob: number | null }[];
  answer: string | string[] | null;
  /** The candidate with the best log-likelihood per character (lm-eval's acc_norm), apart from the answer. */
  answer_norm: string | null;
}

export interface LmEvalRead {
  submission: Submission;
  info?: LmEvalRunInfo;
  samples: LmEvalSample[];
  /** Answers of splits other than test (RuMedTest's private test), by task: the platform's submission.zip. */
  privateAnswers: Record<string, { id: string; prediction: string | string[] | null }[]>;
}

interface TaskConfig {
  test_split?: string;
  output_type?: string;
  num_fewshot?: number;
  metadata?: Record<string, unknown>;
}

/** The first place two texts differ, shown with a little of each around it. */
export function firstDifference(ours: string, theirs: string): string {
  let i = 0;
  while (i < ours.length && i < theirs.length && ours[i] === theirs[i]) i++;
  const cut = (s: string) => JSON.stringify(s.slice(Math.max(0, i - 30), i + 50));
  return `at character ${i}: ours ${cut(ours)}, theirs ${cut(theirs)}`;
}

/** Our task for an lm-eval task: the one its export names, else one whose name its name carries. */
function taskFor(lmTask: string, config: TaskConfig): TaskDefinition | undefined {
  const named = config.metadata?.rumedbench_task;
  if (typeof named === 'string' && isTaskName(named)) return getTask(named);
  const flat = lmTask.toLowerCase().replace(/[^a-z0-9]/g, '');
  const hits = TASKS.filter((t) => flat.includes(t.name.toLowerCase().replace(/[^a-z0-9]/g, '')));
  // The longest name that fits (RuMedTest inside a name that also carries RuMedTest's longer cousins).
  return hits.sort((a, b) => b.name.length - a.name.length)[0];
}

/** The best candidates first (ties to the earlier, as numpy's argmax): one label, or three for a ranking task. */
function choose(
  task: TaskDefinition,
  labels: readonly string[],
  scores: readonly (number | null)[],
): string | string[] | null {
  const order = labels
    .map((label, i) => ({ label, s: scores[i], i }))
    .filter(
      (c): c is { label: string; s: number; i: number } =>
        c.s !== null && c.s !== undefined && Number.isFinite(c.s),
    )
    .sort((a, b) => b.s - a.s || a.i - b.i);
  if (order.length === 0) return null;
  return task.kind === 'ranking'
    ? order.slice(0, task.k ?? 3).map((c) => c.label)
    : (order[0]?.label ?? null);
}

/**
 * Reads an lm-eval output folder (or a results file). Problems come back as issues naming the samples file, its
 * line and the doc's id.
 */
export async function readLmEval(path: string, options: { dataDir?: string } = {}): Promise<LmEvalRead> {
  const issues: SubmissionIssue[] = [];
  const empty = (): LmEvalRead => ({
    submission: { source: path, files: [], issues },
    samples: [],
    privateAnswers: {},
  });
  const found = resultsFiles(path);
  if (found.length > 1) {
    issues.push({
      severity: 'error',
      code: 'LMEVAL_RUN',
      file: path,
      message: `${found.length} lm-eval runs are here; name the results file of the one to read`,
      found: found.map((f) => basename(f)).join(', '),
    });
    return empty();
  }
  const resultsFile = found[0] as string;
  let results: Record<string, unknown>;
  try {
    results = JSON.parse(readFileSync(resultsFile, 'utf8')) as Record<string, unknown>;
  } catch (e) {
    issues.push({
      severity: 'error',
      code: 'LMEVAL_RUN',
      file: resultsFile,
      message: `not a readable lm-eval results file (${(e as Error).message})`,
    });
    return empty();
  }
  const stamp = (RESULTS.exec(basename(resultsFile)) as RegExpExecArray)[1] as string;
  const configs = (results.configs ?? {}) as Record<string, TaskConfig>;
  const config = (results.config ?? {}) as Record<string, unknown>;
  const folder = dirname(resultsFile);
  const info: LmEvalRunInfo = {
    results_file: resultsFile,
    lm_eval_version: typeof results.lm_eval_version === 'string' ? results.lm_eval_version : null,
    model: typeof results.model_name === 'string' ? results.model_name : null,
    model_args: config.model_args ?? null,
    tasks: {},
    settings: {
      model: config.model ?? null,
      batch_size: config.batch_size ?? null,
      limit: config.limit ?? null,
      system_instruction: results.system_instruction ?? null,
      chat_template: results.chat_template ?? null,
      fewshot_as_multiturn: results.fewshot_as_multiturn ?? null,
      n_shot: results['n-shot'] ?? null,
    },
  };
  const files: SubmissionFile[] = [];
  const samples: LmEvalSample[] = [];
  const privateAnswers: LmEvalRead['privateAnswers'] = {};
  const dataDir = options.dataDir ?? resolveDataDir();
  for (const name of readdirSync(folder).sort()) {
    const m = SAMPLES.exec(name);
    if (!m || m[2] !== stamp) continue;
    const lmTask = m[1] as string;
    const file = join(folder, name);
    const cfg = configs[lmTask] ?? {};
    const task = taskFor(lmTask, cfg);
    // Generation samples: their replies would need our parsers on lm-eval's raw replies, not done yet; refused by
    // name rather than checked as log-likelihood requests (which they are not).
    if (task && (cfg.output_type === 'generate_until' || cfg.metadata?.mode === 'generate')) {
      issues.push({
        severity: 'error',
        code: 'LMEVAL_GENERATION_UNREAD',
        file,
        task: task.name,
        message: `lm-eval task "${lmTask}" is ${task.name}'s generation prompt, whose samples rumedbench does not read yet: run \`rumedbench llm\` for it, or run the log-likelihood tasks (group rumedbench) to bring results here`,
      });
      continue;
    }
    if (!task?.prompt.loglik) {
      issues.push({
        severity: 'error',
        code: 'UNKNOWN_TASK_FILE',
        file,
        message: `lm-eval task "${lmTask}" is none of RuMedBench's tasks scored by log-likelihood`,
        expected: `a task written by rumedbench tasks export --format lm-eval (${TASKS.filter(
          (t) => t.prompt.loglik,
        )
          .map((t) => t.name)
          .join(', ')})`,
      });
      continue;
    }
    const meta = cfg.metadata ?? {};
    const split = typeof meta.split === 'string' ? meta.split : (cfg.test_split ?? 'test');
    // The candidates: the export's labels, else ours (a ranking task's from the train inventory of the data).
    let ctx: PromptContext = {};
    if (Array.isArray(meta.labels)) ctx = { labels: meta.labels.map(String) };
    else if (task.kind === 'ranking') {
      const labels = await ifPresent(readGoldLabels(task, 'train', { dataDir }));
      if (labels) ctx = { labels: [...labels].sort() };
    }
    info.tasks[lmTask] = {
      version: (results.versions as Record<string, unknown> | undefined)?.[lmTask] ?? null,
      rumedbench_task: task.name,
      prompt_version: typeof meta.prompt_version === 'string' ? meta.prompt_version : null,
      data_sha256: typeof meta.data_sha256 === 'string' ? meta.data_sha256 : null,
    };
    const lines: JsonlLine[] = [];
    let refused = false;
    const answers: { id: string; prediction: string | string[] | null }[] = [];
    for (const line of parseJsonl(readFileSync(file, 'utf8'))) {
      if (!('value' in line)) {
        lines.push(line);
        continue;
      }
      const s = line.value as {
        doc?: Record<string, unknown>;
        arguments?: Record<string, { arg_0?: unknown; arg_1?: unknown }> | unknown[][];
        filtered_resps?: unknown[];
      };
      const doc = s.doc ?? {};
      const rawId = doc[task.idField];
      const id = rawId === undefined || rawId === null ? undefined : String(rawId);
      const args = (Array.isArray(s.arguments) ? s.arguments : Object.values(s.arguments ?? {})).map((a) =>
        Array.isArray(a)
          ? [a[0], a[1]]
          : [(a as { arg_0?: unknown }).arg_0, (a as { arg_1?: unknown }).arg_1],
      );
      const candidates = task.prompt.loglik.candidates(doc, ctx, {});
      const prompt = loglikContext(task, task.prompt.render(doc));
      // The prompt check: every request's context and continuation, in the candidates' order.
      const bad =
        args.length !== candidates.length
          ? `${args.length} requests for ${candidates.length} candidates (${candidates.map((c) => JSON.stringify(c.text)).join(', ')})`
          : args
              .map(([ctxText, cont], k) =>
                ctxText !== prompt
                  ? `the prompt differs ${firstDifference(prompt, String(ctxText))}`
                  : cont !== candidates[k]?.text
                    ? `candidate ${k + 1} differs: ours ${JSON.stringify(candidates[k]?.text)}, theirs ${JSON.stringify(cont)}`
                    : undefined,
              )
              .find((x) => x !== undefined);
      if (bad !== undefined) {
        issues.push({
          severity: 'error',
          code: 'LMEVAL_PROMPT_MISMATCH',
          file,
          line: line.line,
          ...(id !== undefined ? { id } : {}),
          task: task.name,
          message: `lm-eval asked ${lmTask} otherwise than rumedbench asks ${task.name}: ${bad}; run the tasks rumedbench tasks export --format lm-eval writes`,
        });
        refused = true;
        break;
      }
      const scores = (s.filtered_resps ?? []).map((r) => {
        const v = Number(Array.isArray(r) ? r[0] : r);
        return Number.isFinite(v) ? v : null;
      });
      const labels = candidates.map((c) => c.label);
      const answer = choose(task, labels, scores);
      const norm = choose(
        { ...task, kind: 'classification' } as TaskDefinition,
        labels,
        scores.map((v, i) => (v === null ? null : v / Math.max(1, [...(candidates[i]?.text ?? '')].length))),
      ) as string | null;
      samples.push({
        task: task.name,
        split,
        id: id ?? '',
        prompt,
        candidates: candidates.map((c, i) => ({ ...c, logprob: scores[i] ?? null })),
        answer,
        answer_norm: norm,
      });
      answers.push({ id: id ?? '', prediction: answer });
      // A RuMedBench-format line: the id as the doc carries it, the answer; validated as any file's lines are.
      lines.push({
        line: line.line,
        value: { ...(id !== undefined ? { [task.idField]: rawId } : {}), prediction: answer },
      });
    }
    if (refused) continue;
    if (split !== 'test') {
      privateAnswers[task.name] = answers;
      issues.push({
        severity: 'warning',
        code: 'LMEVAL_OTHER_SPLIT',
        file,
        task: task.name,
        message: `answers ${task.name}'s ${split} split, not scored with the test splits; eval --out writes them to submission.zip`,
      });
      continue;
    }
    files.push({ task: task.name, file, lines });
  }
  return { submission: { source: path, files, issues }, info, samples, privateAnswers };
}
