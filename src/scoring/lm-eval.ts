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
import { type ReplyFlag, readReply, type SentMessage, splitReply } from '../tasks/reply-check.js';
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
    {
      version: unknown;
      rumedbench_task: string;
      mode: 'loglik' | 'generate';
      prompt_version: string | null;
      data_sha256: string | null;
      /** Generation: the task's generation_kwargs (max_gen_toks, until, temperature) as lm-eval ran it. */
      generation_kwargs?: unknown;
    }
  >;
  /** The settings that change what a model is asked: few-shot, chat template, system instruction, limit. */
  settings: Record<string, unknown>;
}

/** One item as lm-eval answered it by log-likelihood. */
export interface LmEvalLoglikSample {
  mode: 'loglik';
  task: string;
  split: string;
  id: string;
  prompt: string;
  candidates: { label: string; text: string; logprob: number | null }[];
  answer: string | string[] | null;
  /** The candidate with the best log-likelihood per character (lm-eval's acc_norm), apart from the answer. */
  answer_norm: string | null;
}

/**
 * One item as lm-eval answered it by generation: its raw reply (`resps`) read by our parser as `rumedbench llm`
 * reads a reply (src/tasks/reply-check.ts), fields as `llm`'s samples name them.
 */
export interface LmEvalGenerateSample {
  mode: 'generate';
  task: string;
  split: string;
  id: string;
  messages: SentMessage[];
  /** The reply's answer text, its reasoning (`<think>` blocks) apart. */
  reply: string;
  reasoning?: string;
  flag?: ReplyFlag;
  status: 'parsed' | 'unparsed';
  /** null: unparsed (counted, scored as wrong), never a default label. */
  answer: string | string[] | null;
  notes?: string[];
  reason?: string;
  /** What lm-eval's own filter made of the reply (`filtered_resps`), which is not what is scored. */
  lm_eval_filtered: unknown;
}

export type LmEvalSample = LmEvalLoglikSample | LmEvalGenerateSample;

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

/** A line of a samples file, as lm-eval 0.4.x writes it. */
interface LmEvalLine {
  doc?: Record<string, unknown>;
  arguments?: Record<string, { arg_0?: unknown; arg_1?: unknown }> | unknown[][];
  resps?: unknown[];
  filtered_resps?: unknown[];
}

/** What one sample reads as: the item's sample, or why it cannot be read. */
type SampleRead = { sample: LmEvalSample } | { bad: string; code: 'LMEVAL_PROMPT_MISMATCH' | 'LMEVAL_RUN' };

/** Each request's first two arguments (context and continuation, or context and generation settings). */
const requestArgs = (s: LmEvalLine): unknown[][] =>
  (Array.isArray(s.arguments) ? s.arguments : Object.values(s.arguments ?? {})).map((a) =>
    Array.isArray(a) ? [a[0], a[1]] : [(a as { arg_0?: unknown }).arg_0, (a as { arg_1?: unknown }).arg_1],
  );

/** A log-likelihood sample: every request checked against our prompt and candidates, the answer their argmax. */
function readLoglik(
  task: TaskDefinition,
  ctx: PromptContext,
  s: LmEvalLine,
  at: { split: string; id: string },
): SampleRead {
  const loglik = task.prompt.loglik as NonNullable<TaskDefinition['prompt']['loglik']>;
  const doc = s.doc ?? {};
  const args = requestArgs(s);
  const candidates = loglik.candidates(doc, ctx, {});
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
  if (bad !== undefined) return { bad, code: 'LMEVAL_PROMPT_MISMATCH' };
  const scores = (s.filtered_resps ?? []).map((r) => {
    const v = Number(Array.isArray(r) ? r[0] : r);
    return Number.isFinite(v) ? v : null;
  });
  const labels = candidates.map((c) => c.label);
  return {
    sample: {
      mode: 'loglik',
      task: task.name,
      ...at,
      prompt,
      candidates: candidates.map((c, i) => ({ ...c, logprob: scores[i] ?? null })),
      answer: choose(task, labels, scores),
      answer_norm: choose(
        { ...task, kind: 'classification' } as TaskDefinition,
        labels,
        scores.map((v, i) => (v === null ? null : v / Math.max(1, [...(candidates[i]?.text ?? '')].length))),
      ) as string | null,
    },
  };
}

/**
 * The messages lm-eval sent for a generation request: with `--apply_chat_template` and a chat endpoint it logs them
 * as one JSON text (its JsonChatStr, written as a one-element list); anything else is a plain prompt, not ours.
 */
function sentMessages(arg: unknown): SentMessage[] | string {
  const text = Array.isArray(arg) && arg.length === 1 ? arg[0] : arg;
  if (typeof text !== 'string') return `its request is not a prompt (${JSON.stringify(arg)?.slice(0, 80)})`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const isMessage = (m: unknown): m is SentMessage =>
    typeof m === 'object' &&
    m !== null &&
    typeof (m as SentMessage).role === 'string' &&
    typeof (m as SentMessage).content === 'string';
  if (!Array.isArray(parsed) || !parsed.every(isMessage))
    return `lm-eval sent one plain text, not chat messages (run it with --apply_chat_template): ${JSON.stringify(text.slice(0, 80))}`;
  return parsed.map((m) => ({ role: m.role, content: m.content }));
}

/**
 * A generation sample: the messages checked against ours (zero-shot, as `llm` sends them), then lm-eval's raw reply
 * (`resps`, not its filtered one) read by our parser exactly as `llm` reads a reply. lm-eval keeps neither the
 * server's finish_reason nor its reasoning field, so a reply cut off by the token limit is read as given.
 */
function readGenerated(
  task: TaskDefinition,
  ctx: PromptContext,
  s: LmEvalLine,
  at: { split: string; id: string },
): SampleRead {
  const doc = s.doc ?? {};
  const args = requestArgs(s);
  if (args.length !== 1)
    return { bad: `${args.length} requests for one item, not 1`, code: 'LMEVAL_PROMPT_MISMATCH' };
  const ours: SentMessage[] = [
    ...(task.prompt.system ? [{ role: 'system', content: task.prompt.system }] : []),
    { role: 'user', content: `${task.prompt.instruction(ctx)}\n\n${task.prompt.render(doc)}` },
  ];
  const theirs = sentMessages(args[0]?.[0]);
  if (typeof theirs === 'string') return { bad: theirs, code: 'LMEVAL_PROMPT_MISMATCH' };
  const roles = (m: SentMessage[]) => m.map((x) => x.role).join(', ');
  const bad =
    roles(theirs) !== roles(ours)
      ? `the messages differ: ours ${roles(ours)}, theirs ${roles(theirs)}`
      : ours
          .map((m, k) =>
            m.content !== theirs[k]?.content
              ? `the ${m.role} message differs ${firstDifference(m.content, theirs[k]?.content ?? '')}`
              : undefined,
          )
          .find((x) => x !== undefined);
  if (bad !== undefined) return { bad, code: 'LMEVAL_PROMPT_MISMATCH' };
  // One reply per request (lm-eval's `repeats: 1`); a server's null content is no text, as `llm` takes it.
  const replies = s.resps?.[0];
  if (
    !Array.isArray(replies) ||
    replies.length !== 1 ||
    (replies[0] !== null && typeof replies[0] !== 'string')
  )
    return {
      bad: `its reply is not one text (resps ${JSON.stringify(s.resps)?.slice(0, 80)})`,
      code: 'LMEVAL_RUN',
    };
  const text = (replies[0] as string | null) ?? '';
  const r = readReply(task, { text }, { messages: ours, raw: doc, ctx });
  const split = splitReply(text);
  return {
    sample: {
      mode: 'generate',
      task: task.name,
      ...at,
      messages: ours,
      reply: split.answer,
      ...(split.reasoning !== undefined ? { reasoning: split.reasoning } : {}),
      ...(r.flag !== undefined ? { flag: r.flag } : {}),
      status: r.status,
      answer: r.answer,
      ...(r.status === 'parsed' ? { notes: r.notes } : { reason: r.reason }),
      lm_eval_filtered: s.filtered_resps?.[0] ?? null,
    },
  };
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
      gen_kwargs: config.gen_kwargs ?? null,
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
    const mode =
      cfg.output_type === 'generate_until' || cfg.metadata?.mode === 'generate' ? 'generate' : 'loglik';
    if (!task || (mode === 'loglik' && !task.prompt.loglik)) {
      issues.push({
        severity: 'error',
        code: 'UNKNOWN_TASK_FILE',
        file,
        message: `lm-eval task "${lmTask}" is none of RuMedBench's tasks${mode === 'loglik' ? ' scored by log-likelihood' : ''}`,
        expected: `a task written by rumedbench tasks export --format lm-eval (${TASKS.filter(
          (t) => mode === 'generate' || t.prompt.loglik,
        )
          .map((t) => t.name)
          .join(', ')})`,
      });
      continue;
    }
    // One answer per item: a run of both prompts of a task (groups rumedbench and rumedbench_gen) is two answers.
    const twice = Object.entries(info.tasks).find(([, t]) => t.rumedbench_task === task.name);
    if (twice) {
      issues.push({
        severity: 'error',
        code: 'LMEVAL_RUN',
        file,
        task: task.name,
        message: `lm-eval tasks "${twice[0]}" and "${lmTask}" both answer ${task.name}: run the log-likelihood tasks (group rumedbench) and the generation tasks (group rumedbench_gen) as two lm-eval runs`,
      });
      continue;
    }
    const meta = cfg.metadata ?? {};
    const split = typeof meta.split === 'string' ? meta.split : (cfg.test_split ?? 'test');
    // The candidates: the export's labels, else ours (a ranking task's from the train inventory of the data); the
    // generation prompt of a ranking task lists that inventory, and its parser reads codes against it.
    let ctx: PromptContext = {};
    if (mode === 'loglik' && Array.isArray(meta.labels)) ctx = { labels: meta.labels.map(String) };
    else if (task.kind === 'ranking') {
      const labels = await ifPresent(readGoldLabels(task, 'train', { dataDir }));
      if (labels) ctx = { labels: [...labels].sort() };
    }
    info.tasks[lmTask] = {
      version: (results.versions as Record<string, unknown> | undefined)?.[lmTask] ?? null,
      rumedbench_task: task.name,
      mode,
      prompt_version: typeof meta.prompt_version === 'string' ? meta.prompt_version : null,
      data_sha256: typeof meta.data_sha256 === 'string' ? meta.data_sha256 : null,
      ...(mode === 'generate'
        ? { generation_kwargs: (cfg as { generation_kwargs?: unknown }).generation_kwargs ?? null }
        : {}),
    };
    const lines: JsonlLine[] = [];
    let refused = false;
    const answers: { id: string; prediction: string | string[] | null }[] = [];
    for (const line of parseJsonl(readFileSync(file, 'utf8'))) {
      if (!('value' in line)) {
        lines.push(line);
        continue;
      }
      const s = line.value as LmEvalLine;
      const doc = s.doc ?? {};
      const rawId = doc[task.idField];
      const id = rawId === undefined || rawId === null ? undefined : String(rawId);
      const read =
        mode === 'generate'
          ? readGenerated(task, ctx, s, { split, id: id ?? '' })
          : readLoglik(task, ctx, s, { split, id: id ?? '' });
      if ('bad' in read) {
        issues.push({
          severity: 'error',
          code: read.code,
          file,
          line: line.line,
          ...(id !== undefined ? { id } : {}),
          task: task.name,
          message:
            read.code === 'LMEVAL_PROMPT_MISMATCH'
              ? `lm-eval asked ${lmTask} otherwise than rumedbench asks ${task.name}: ${read.bad}; run the tasks rumedbench tasks export --format lm-eval writes${mode === 'generate' ? ' (the generation tasks with --apply_chat_template)' : ''}`
              : `${lmTask}: ${read.bad}`,
        });
        refused = true;
        break;
      }
      samples.push(read.sample);
      answers.push({ id: id ?? '', prediction: read.sample.answer });
      // A RuMedBench-format line: the id as the doc carries it, the answer; validated as any file's lines are.
      lines.push({
        line: line.line,
        value: { ...(id !== undefined ? { [task.idField]: rawId } : {}), prediction: read.sample.answer },
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
