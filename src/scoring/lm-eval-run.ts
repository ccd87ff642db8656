/**
 * An lm-evaluation-harness run written as a run folder of ours (`eval LMEVAL_OUT --out DIR`), apart from the reader
 * (lm-eval.ts), which the submission reader calls: the writer needs the run log, which needs the scorer's types.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { toJsonl } from '../data/jsonl.js';
import { getTask } from '../tasks/registry.js';
import { REPLY_FLAGS } from '../tasks/reply-check.js';
import { VERSION } from '../version.js';
import { RunFolderWriter } from './formats.js';
import type { LmEvalRead, LmEvalRunInfo, LmEvalSample } from './lm-eval.js';
import { writeManifest, writeRunSummary } from './run-log.js';
import type { EvaluationResult } from './score.js';

/**
 * An lm-eval run as a run folder of ours (`eval LMEVAL_OUT --out DIR`): predictions/ (RuMedBench format) and
 * submission.zip (private tests), samples.jsonl (log-likelihood: each item's prompt, candidates with their
 * log-likelihoods, answer and acc_norm's answer apart; generation: the messages, the reply, its reading by our
 * parser), manifest.json saying where it came from, and summary.json (the scorer's result, unparsed replies counted).
 * lm-eval 0.4.13 records no token counts (neither for log-likelihood nor for chat requests), so the summary has no
 * `usage`.
 */
export async function writeLmEvalRunFolder(
  read: LmEvalRead,
  evaluation: EvaluationResult,
  out: string,
): Promise<void> {
  const info = read.info as LmEvalRunInfo;
  const writer = new RunFolderWriter(out);
  const byTask = new Map<string, LmEvalSample[]>();
  for (const s of read.samples) byTask.set(s.task, [...(byTask.get(s.task) ?? []), s]);
  for (const [name, samples] of byTask) {
    const task = getTask(name);
    const items = samples.map((s) => ({ id: s.id, prediction: s.answer }));
    if (read.privateAnswers[name]) writer.addPrivate(task, items);
    else writer.writeTest(task, items);
  }
  writer.finish();
  writeFileSync(join(out, 'samples.jsonl'), toJsonl(read.samples));
  const args = info.model_args;
  // One mode for the run where all its tasks share it (a run of one group); per task in the summary always.
  const modes = [...new Set(read.samples.map((s) => s.mode))];
  const mode = modes.length === 1 ? modes[0] : undefined;
  writeManifest(out, {
    rumedbench_version: VERSION,
    created: new Date().toISOString(),
    provider: 'lm-eval',
    ...(typeof info.model === 'string' ? { model: info.model } : {}),
    ...(mode ? { mode } : {}),
    limit: typeof info.settings.limit === 'number' ? info.settings.limit : null,
    prompt_versions: Object.fromEntries(
      Object.values(info.tasks).flatMap((t) =>
        t.prompt_version ? [[t.rumedbench_task, t.prompt_version]] : [],
      ),
    ),
    data_sha256: Object.fromEntries(
      Object.values(info.tasks).flatMap((t) => (t.data_sha256 ? [[t.rumedbench_task, t.data_sha256]] : [])),
    ),
    lm_eval: {
      version: info.lm_eval_version,
      results_file: info.results_file,
      model_args: args,
      settings: info.settings,
      tasks: info.tasks,
    },
  });
  const tasks = Object.fromEntries(
    [...byTask].map(([name, samples]) => {
      const unparsed = samples.filter((s) => s.answer === null).length;
      const taskMode = samples[0]?.mode ?? 'loglik';
      return [
        name,
        {
          mode: taskMode,
          samples: samples.length,
          unparsed,
          unparsed_rate: (100 * unparsed) / samples.length,
          failed: 0,
          // Generation: replies flagged before parsing, by flag, as `llm` counts them (lm-eval records no
          // finish_reason, so none is `truncated`).
          ...(taskMode === 'generate'
            ? {
                replies: Object.fromEntries(
                  REPLY_FLAGS.map((flag) => [
                    flag,
                    samples.filter((s) => s.mode === 'generate' && s.flag === flag).length,
                  ]),
                ),
              }
            : {}),
        },
      ];
    }),
  );
  writeRunSummary(out, { ...evaluation, kind: 'llm', llm: { ...(mode ? { mode } : {}), tasks } });
}
