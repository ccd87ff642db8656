/**
 * The tasks as EleutherAI lm-evaluation-harness 0.4.x tasks (`lm_eval --include_path DIR`): one YAML per task that
 * is scored by log-likelihood (group `rumedbench`), one per task with its generation prompt (`<task>_gen`, group
 * `rumedbench_gen`: the system prompt and the user message `llm` sends zero-shot, and a filter that takes the answer
 * as rumedbench reads it before its parser), and the helper module their `!function` entries name.
 * The data are the user's own files (`dataset_path: json` with `data_files` pointing at them; nothing is
 * downloaded); the prompts and candidates are ours byte for byte, since the helper renders each item from the pieces
 * our own renderer produces (found by rendering a record whose every field is a marker, a private-use character pair no definition writes). Jinja alone cannot say it:
 * RuMedTest's option fields are named "1" … "4", which a template cannot name, and JavaScript's way of printing a
 * list or a number is not Python's. RuMedNER is not exported: its answer is a JSON list of entities that our parser
 * aligns to the tokens as IOB2 tags, which lm-eval's generation tasks cannot score; `rumedbench llm` scores it.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { UsageError } from '../errors.js';
import { loglikContext } from '../tasks/loglik-prompt.js';
import { definitionFileOf } from '../tasks/registry.js';
import type { PromptContext, Split, TaskDefinition } from '../tasks/types.js';
import { VERSION } from '../version.js';
import { sha256File } from './checksum.js';
import { ifPresent, readGoldLabels } from './load.js';
import { splitPath } from './paths.js';

/** The helper module's name: `!function rumedbench_prompts.<task>_text`. */
export const LMEVAL_HELPER = 'rumedbench_prompts';
export const LMEVAL_GROUP = 'rumedbench';
/** The group of the generation tasks (`<task>_gen`). */
export const LMEVAL_GEN_GROUP = 'rumedbench_gen';
/** `llm`'s default --max-tokens (src/engine/spec.ts, LLM_DEFAULTS), which the data layer does not import. */
const GEN_MAX_TOKENS = 1024;

/** The lm-eval task name of one of ours: `rumedbench_rumeddanet`. */
export const lmEvalTaskName = (task: string): string =>
  `rumedbench_${task.toLowerCase().replace(/[^a-z0-9_]/g, '_')}`;

/** One item's text as pieces: literal text and the fields put between it (what the helper joins). */
export type TextPiece = string | { field: string };

/**
 * The pieces of a task's item text, found by rendering a record whose every field is a marker: the log-likelihood
 * context by default, or what `wrap` makes of the rendered item (the generation prompt's instruction before it).
 */
export function renderPieces(
  task: TaskDefinition,
  wrap: (rendered: string) => string = (r) => loglikContext(task, r),
): TextPiece[] {
  const fields = Object.keys(task.recordFields);
  const marker = (i: number) => `\uE000${i}\uE001`;
  const rendered = wrap(task.prompt.render(Object.fromEntries(fields.map((f, i) => [f, marker(i)]))));
  const pieces: TextPiece[] = [];
  let last = 0;
  for (const m of rendered.matchAll(/\uE000(\d+)\uE001/g)) {
    if (m.index > last) pieces.push(rendered.slice(last, m.index));
    pieces.push({ field: fields[Number(m[1])] as string });
    last = m.index + m[0].length;
  }
  if (last < rendered.length) pieces.push(rendered.slice(last));
  return pieces;
}

export interface ExportedTask {
  task: string;
  lmEvalTask: string;
  split: Split;
  dataFile: string;
  yaml: string;
  /** Scored by log-likelihood (`multiple_choice`), or the generation prompt (`generate_until`). */
  mode: 'loglik' | 'generate';
}

export interface LmEvalExport {
  dir: string;
  tasks: ExportedTask[];
  /** Tasks not exported, each with why. */
  skipped: Record<string, string>;
}

/** A YAML scalar: a JSON string is a YAML double-quoted one. */
const q = (s: string): string => JSON.stringify(s);

// The helper lm-eval's `!function` entries call: the item's text from the pieces, the gold's index among the
// choices. Values are printed as our renderer prints them (JavaScript's String, lists joined with spaces).
const HELPER_PY = `"""RuMedBench prompts for lm-evaluation-harness, written by \`rumedbench tasks export --format lm-eval\`.

Each item's text is put together from the pieces in ${LMEVAL_HELPER}.json (literal text and record fields), as
rumedbench renders it, byte for byte. Do not edit: export again instead.
"""

import json
import math
import os
import re

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "${LMEVAL_HELPER}.json"), encoding="utf-8") as f:
    SPECS = json.load(f)


def _show(value):
    # As JavaScript's String(), and a list as Array.join(" ") prints it.
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return str(int(value))
    if isinstance(value, (list, tuple)):
        return " ".join("" if v is None else _show(v) for v in value)
    return str(value)


def _text(task, doc):
    return "".join(p if isinstance(p, str) else _show(doc.get(p["field"])) for p in SPECS[task]["pieces"])


def _target(task, doc):
    spec = SPECS[task]
    gold = doc.get(spec["gold_field"])
    labels = spec["labels"]
    # No gold (a private test), or one outside the candidates: -1, which lm-eval's acc counts as wrong (rumedbench
    # scores the answers itself, on its own gold).
    return labels.index(_show(gold)) if gold is not None and _show(gold) in labels else -1


def _gen_target(task, doc):
    gold = doc.get(SPECS[task]["gold_field"])
    if gold is None:
        return ""
    return ", ".join(_show(g) for g in gold) if isinstance(gold, (list, tuple)) else _show(gold)


# The answer as rumedbench reads it before its parser: reasoning blocks removed, the text after the last answer marker
# ("Ответ:", "Итоговый ответ:", "Answer:", …), else the whole reply (src/tasks/parse.ts, finalAnswer; its markdown
# stripping is not repeated here). rumedbench's parsers then read synonyms, option numbers and codes in it; lm-eval's
# exact_match against the gold label is stricter.
_THINK = re.compile(r"<(think|thinking|reasoning)>[\\s\\S]*?</\\1>", re.I)
_UNCLOSED = re.compile(r"<(think|thinking|reasoning)>[\\s\\S]*$", re.I)
_CLOSE = re.compile(r"</(think|thinking|reasoning)>", re.I)
_MARKER = re.compile(
    r"(?:итоговый\\s+ответ|окончательный\\s+ответ|правильный\\s+ответ|final\\s+answer|ответ|answer)\\s*[:：—-]\\s*", re.I
)


def _final_answer(reply):
    t = _THINK.sub(" ", reply)
    close = _CLOSE.search(t)
    if close:
        t = t[t.index(">", close.start()) + 1 :]
    t = _UNCLOSED.sub(" ", t)
    last = None
    for m in _MARKER.finditer(t):
        last = m.end()
    return (t[last:] if last is not None else t).strip()


def answer_filter(resps, docs):
    return [[_final_answer(r) for r in rs] for rs in resps]
`;

/**
 * Writes the task folder. `dataDir` is the user's data folder; the files named in the YAML are its absolute paths.
 * A task without a log-likelihood prompt, or without its data, is skipped and said why.
 */
export async function exportLmEval(
  tasks: readonly TaskDefinition[],
  options: { out: string; dataDir: string },
): Promise<LmEvalExport> {
  const dir = resolve(options.out);
  const dataDir = resolve(options.dataDir);
  const skipped: Record<string, string> = {};
  const specs: Record<string, unknown> = {};
  const exported: ExportedTask[] = [];
  const helpers: string[] = [];
  for (const task of tasks) {
    if (task.kind === 'tagging') {
      skipped[task.name] =
        'its answer is a JSON list of entities that rumedbench aligns to the tokens as IOB2 tags, which lm-eval cannot score: run `rumedbench llm` for it';
      continue;
    }
    // The test split, or the only one there is (RuMedTest's private test).
    const split = (['test', 'private_test'] as const).find((s) =>
      (task.splits as readonly Split[]).includes(s),
    );
    const dataFile = split ? splitPath(dataDir, task, split) : undefined;
    const data = dataFile && existsSync(dataFile) ? await sha256File(dataFile) : undefined;
    if (!split || !dataFile || !data) {
      skipped[task.name] = split ? `${dataFile} is missing` : 'it has no test split';
      continue;
    }
    // A ranking task's candidates (and its generation prompt's list) are the train inventory, as `llm` reads it.
    let ctx: PromptContext = {};
    let noInventory: string | undefined;
    if (task.kind === 'ranking') {
      const labels = await ifPresent(readGoldLabels(task, 'train', { dataDir }));
      if (labels) ctx = { labels: [...labels].sort() };
      else if (!task.labels)
        noInventory = `its candidates are the train inventory, and ${splitPath(dataDir, task, 'train')} is missing`;
    }
    const definition = definitionFileOf(task);
    const definitionSha = definition ? (await sha256File(definition)).sha256 : undefined;
    const metadata = (mode: string, labels?: readonly string[]) => [
      'metadata:',
      '  version: 1.0',
      `  rumedbench_task: ${q(task.name)}`,
      `  rumedbench_version: ${q(VERSION)}`,
      `  mode: ${mode}`,
      `  prompt_version: ${q(task.prompt.version)}`,
      `  id_field: ${q(task.idField)}`,
      `  split: ${split}`,
      ...(labels ? [`  labels: [${labels.map(q).join(', ')}]`] : []),
      `  data_file: ${q(dataFile)}`,
      `  data_sha256: ${q(data.sha256)}`,
      ...(definition
        ? [`  definition_file: ${q(definition)}`, `  definition_sha256: ${q(definitionSha ?? '')}`]
        : []),
      '',
    ];
    const head = (name: string, what: string) => [
      `# ${task.name} (${task.title}) for lm-evaluation-harness 0.4.x, written by rumedbench ${VERSION}.`,
      `# ${what}; do not edit, export again.`,
      `task: ${name}`,
    ];
    const dataset = [
      'dataset_path: json',
      `dataset_kwargs: {data_files: {${split}: ${q(dataFile)}}}`,
      `test_split: ${split}`,
    ];
    if (task.prompt.loglik && noInventory) skipped[`${task.name} (log-likelihood)`] = noInventory;
    else if (task.prompt.loglik) {
      const candidates = task.prompt.loglik.candidates({}, ctx, {});
      const name = lmEvalTaskName(task.name);
      specs[name] = {
        task: task.name,
        pieces: renderPieces(task),
        labels: candidates.map((c) => c.label),
        gold_field: task.goldField,
      };
      helpers.push(
        `\n\ndef ${name}_text(doc):\n    return _text(${q(name)}, doc)\n\n\ndef ${name}_target(doc):\n    return _target(${q(name)}, doc)\n`,
      );
      const yaml = [
        ...head(name, "The prompt and candidates are rumedbench's (llm --mode loglik), byte for byte"),
        `tag: [${LMEVAL_GROUP}_tasks]`,
        ...dataset,
        'output_type: multiple_choice',
        `doc_to_text: !function ${LMEVAL_HELPER}.${name}_text`,
        `doc_to_target: !function ${LMEVAL_HELPER}.${name}_target`,
        `doc_to_choice: [${candidates.map((c) => q(c.text)).join(', ')}]`,
        // The candidates carry their leading space: nothing goes between the context and them.
        `target_delimiter: ""`,
        'metric_list:',
        '  - {metric: acc, aggregation: mean, higher_is_better: true}',
        '  - {metric: acc_norm, aggregation: mean, higher_is_better: true}',
        ...metadata(
          'loglik',
          candidates.map((c) => c.label),
        ),
      ].join('\n');
      exported.push({ task: task.name, lmEvalTask: name, split, dataFile, yaml, mode: 'loglik' });
    }
    // The generation prompt, as `llm` sends it zero-shot: the system prompt (lm-eval's `description`, which its chat
    // template sends as the system message) and one user message, the instruction, a blank line, the item.
    const gen = `${lmEvalTaskName(task.name)}_gen`;
    const instruction = task.prompt.instruction(ctx);
    specs[gen] = {
      task: task.name,
      pieces: renderPieces(task, (r) => `${instruction}\n\n${r}`),
      labels: [],
      gold_field: task.goldField,
    };
    helpers.push(
      `\n\ndef ${gen}_text(doc):\n    return _text(${q(gen)}, doc)\n\n\ndef ${gen}_target(doc):\n    return _gen_target(${q(gen)}, doc)\n`,
    );
    const genYaml = [
      ...head(gen, "The prompt is rumedbench's (llm, zero-shot), byte for byte with --apply_chat_template"),
      `tag: [${LMEVAL_GEN_GROUP}_tasks]`,
      ...dataset,
      'output_type: generate_until',
      `description: ${q(task.prompt.system)}`,
      `doc_to_text: !function ${LMEVAL_HELPER}.${gen}_text`,
      `doc_to_target: !function ${LMEVAL_HELPER}.${gen}_target`,
      `generation_kwargs: {until: [], max_gen_toks: ${GEN_MAX_TOKENS}, do_sample: false, temperature: 0}`,
      // The answer as rumedbench reads it before its parser (see the helper); exact_match against the gold label
      // is lm-eval's own, stricter reading: rumedbench's parser reads synonyms, option numbers and codes in text.
      'filter_list:',
      '  - name: rumedbench_answer',
      '    filter:',
      `      - {function: custom, filter_fn: !function ${LMEVAL_HELPER}.answer_filter}`,
      '      - {function: take_first}',
      'metric_list:',
      '  - {metric: exact_match, aggregation: mean, higher_is_better: true, ignore_case: true, ignore_punctuation: true}',
      ...metadata('generate'),
    ].join('\n');
    exported.push({ task: task.name, lmEvalTask: gen, split, dataFile, yaml: genYaml, mode: 'generate' });
  }
  if (exported.length === 0)
    throw new UsageError(
      `nothing to export: ${Object.entries(skipped)
        .map(([t, why]) => `${t}: ${why}`)
        .join('; ')}`,
    );
  mkdirSync(dir, { recursive: true });
  for (const e of exported) writeFileSync(join(dir, `${e.lmEvalTask}.yaml`), e.yaml);
  writeFileSync(join(dir, `${LMEVAL_HELPER}.json`), `${JSON.stringify(specs, null, 2)}\n`);
  writeFileSync(join(dir, `${LMEVAL_HELPER}.py`), `${HELPER_PY}${helpers.join('')}`);
  const group = (name: string, what: string, mode: ExportedTask['mode']) =>
    writeFileSync(
      join(dir, `${name}.yaml`),
      [
        `# ${what}, written by rumedbench ${VERSION}.`,
        ...Object.entries(skipped).map(([t, why]) => `# ${t}: not exported: ${why}.`),
        `group: ${name}`,
        'task:',
        ...exported.filter((e) => e.mode === mode).map((e) => `  - ${e.lmEvalTask}`),
        'metadata:',
        '  version: 1.0',
        `  rumedbench_version: ${q(VERSION)}`,
        '',
      ].join('\n'),
    );
  if (exported.some((e) => e.mode === 'loglik'))
    group(LMEVAL_GROUP, "RuMedBench's tasks scored by log-likelihood", 'loglik');
  group(
    LMEVAL_GEN_GROUP,
    "RuMedBench's tasks with the generation prompt (run with --apply_chat_template; rumedbench's parsers score the replies, not lm-eval's exact_match)",
    'generate',
  );
  return { dir, tasks: exported, skipped };
}
