/**
 * Tasks defined in a file (`rumedbench.task/1`, YAML or JSON): a new test set without code. A definition names its
 * data files, fields, type, metrics and prompts; {@link compileTask} turns it into the same {@link TaskDefinition}
 * the built-in tasks are, so every command reads both alike. Problems are reported as `file:line:col: reason`, all
 * of them at once.
 */

import { createRequire } from 'node:module';
import { dirname, isAbsolute, resolve } from 'node:path';
import type { z } from 'zod';
import { TaskDefinitionError } from '../errors.js';
import { getEntities } from './iob2.js';
import { parseEntities, parseLabel, parseLabelList, parseOption } from './parse.js';
import { type FieldRule, iob2Tags, type RecordFields } from './record.js';
import {
  type HitAtK,
  type MetricName,
  type PromptVariant,
  SPLITS,
  type Split,
  type TaskDefinition,
  type TaskPrompt,
} from './types.js';

export const TASK_SCHEMA = 'rumedbench.task/1';

export const TASK_TYPES = ['classification', 'multiple_choice', 'ranking', 'tagging', 'multilabel'] as const;
export type TaskType = (typeof TASK_TYPES)[number];

/** The metric menu, and which fit which type; the first metric listed is the task's score's first part. */
export const METRIC_MENU = [
  'accuracy',
  'hit_at_k',
  'macro_f1',
  'micro_f1',
  'entity_f1',
  'token_accuracy',
] as const;
const METRICS_OF: Record<TaskType, readonly (typeof METRIC_MENU)[number][]> = {
  classification: ['accuracy', 'macro_f1', 'micro_f1'],
  multiple_choice: ['accuracy', 'macro_f1', 'micro_f1'],
  ranking: ['accuracy', 'hit_at_k'],
  tagging: ['token_accuracy', 'entity_f1'],
  multilabel: ['macro_f1', 'micro_f1', 'accuracy'],
};

/**
 * The file's schemas, made on first use: loading zod and building them takes tens of milliseconds, which every
 * command would pay at start (the registry imports this module) though most read no definition.
 */
function makeSchemas() {
  const { z } = createRequire(import.meta.url)('zod') as typeof import('zod');
  const field = z.string().regex(/^[^\s]+$/, 'a field name (no spaces)');
  const label = z.union([z.string().min(1), z.number().int()]).transform(String);

  const promptSchema = z.strictObject({
    id: z.string().regex(/^[A-Za-z0-9_-]{1,32}$/, 'letters, digits, _ or -'),
    version: z.string().min(1),
    instruction: z.string().min(1),
    system: z.string().min(1).optional(),
    /** The item as the model sees it: `{field}` is replaced by the field's text. */
    template: z.string().min(1).optional(),
  });

  const base = {
    schema: z.literal(TASK_SCHEMA),
    name: z
      .string()
      .regex(
        /^[A-Za-z][A-Za-z0-9_-]{0,63}$/,
        'a name of letters, digits, _ or - (it names the task file, <name>.jsonl)',
      ),
    title: z.string().min(1).max(80).optional(),
    description: z.string().min(1),
    licence: z.string().min(1),
    citation: z.string().min(1).optional(),
    files: z
      .strictObject({
        train: z.string().min(1).optional(),
        dev: z.string().min(1).optional(),
        test: z.string().min(1).optional(),
        private_test: z.string().min(1).optional(),
      })
      .optional(),
    /** Splits that exist where no data file is given (a closed test whose gold only its host holds). */
    splits: z.array(z.enum(SPLITS)).min(1).optional(),
    id: field,
    inputs: z.array(field),
    gold: field,
    metrics: z.array(z.enum(METRIC_MENU)).min(1),
    cluster: field.optional(),
    prompts: z.array(promptSchema).min(1).optional(),
    few_shot: z.enum(SPLITS).optional(),
    guidelines: z.string().min(1).optional(),
  };

  const SCHEMAS = {
    classification: z.strictObject({
      ...base,
      type: z.literal('classification'),
      labels: z.array(label).min(2),
      label_names: z.record(z.string(), z.string()).optional(),
      naive_label: label.optional(),
    }),
    multiple_choice: z.strictObject({
      ...base,
      type: z.literal('multiple_choice'),
      /** Option key (the gold value) → the field holding that option's text. */
      options: z
        .record(z.string().min(1), field)
        .refine((o) => Object.keys(o).length >= 2, 'at least two options'),
      question: field.optional(),
      naive_label: label.optional(),
    }),
    ranking: z.strictObject({
      ...base,
      type: z.literal('ranking'),
      k: z.number().int().min(1).max(10).default(3),
      labels: z.array(label).min(2).optional(),
      label_pattern: z.string().min(1).optional(),
    }),
    tagging: z.strictObject({
      ...base,
      type: z.literal('tagging'),
      tokens: field,
      entity_types: z.array(z.string().regex(/^[A-Za-z][A-Za-z0-9_]*$/, 'a tag name')).min(1),
    }),
    multilabel: z.strictObject({
      ...base,
      type: z.literal('multilabel'),
      classes: z.array(label).min(2),
    }),
  } as const;
  return { SCHEMAS, label, field };
}
let made: ReturnType<typeof makeSchemas> | undefined;
const schemas = () => {
  made ??= makeSchemas();
  return made;
};

export type TaskFile = z.output<ReturnType<typeof makeSchemas>['SCHEMAS'][TaskType]>;

/** The answer format each type asks for: said after every instruction, so that the type's parser reads the reply. */
function answerFormat(def: TaskFile): string {
  switch (def.type) {
    case 'classification':
      return `Последняя строка ответа: «Ответ: МЕТКА», где МЕТКА — одна из: ${def.labels.join(', ')}.`;
    case 'multiple_choice':
      return `Последняя строка ответа: «Ответ: N», где N — номер варианта (${Object.keys(def.options).join(', ')}).`;
    case 'ranking':
      return `Последняя строка ответа: «Ответ: МЕТКА1, МЕТКА2, …» — не более ${def.k}, от наиболее вероятной.`;
    case 'multilabel':
      return `Последняя строка ответа: «Ответ: КЛАСС1, КЛАСС2, …» — все подходящие классы из списка: ${def.classes.join(', ')}; «Ответ: нет», если ни один не подходит.`;
    case 'tagging':
      return `Ответь только JSON-списком сущностей: [{"text": "…", "type": "…"}], где type — одно из: ${def.entity_types.join(', ')}.`;
  }
}

/** The item as a model sees it: the prompt's template, else one `field: value` line per input (and the options). */
function renderer(def: TaskFile, template: string | undefined) {
  const show = (v: unknown) => (Array.isArray(v) ? v.join(' ') : String(v ?? ''));
  return (raw: Readonly<Record<string, unknown>>): string => {
    if (template) return template.replace(/\{([^{}\s]+)\}/g, (m, f: string) => (f in raw ? show(raw[f]) : m));
    const lines = def.inputs.map((f) => `${f}: ${show(raw[f])}`);
    if (def.type === 'multiple_choice')
      for (const [key, f] of Object.entries(def.options)) lines.push(`${key}. ${show(raw[f])}`);
    return lines.join('\n');
  };
}

const DEFAULT_SYSTEM = 'Ты эксперт в медицине. Отвечай кратко и строго в требуемом формате.';

function compilePrompt(def: TaskFile): TaskPrompt {
  const prompts = def.prompts ?? [{ id: 'p1', version: `${def.name}-v1`, instruction: def.description }];
  const first = prompts[0] as (typeof prompts)[number];
  const format = answerFormat(def);
  const variants: PromptVariant[] = prompts.map((p) => ({
    id: p.id,
    version: p.version,
    instruction: () => `${p.instruction} ${format}`,
  }));
  const labels =
    def.type === 'classification'
      ? def.labels
      : def.type === 'multiple_choice'
        ? Object.keys(def.options)
        : def.type === 'ranking'
          ? def.labels
          : undefined;
  const candidates = (list: readonly string[]) => list.map((l) => ({ label: l, text: ` ${l}` }));
  const parse: TaskPrompt['parse'] = (reply, raw) => {
    switch (def.type) {
      case 'classification':
        return parseLabel(reply, def.labels);
      case 'multiple_choice': {
        const keys = Object.keys(def.options);
        return keys.every((k) => /^[1-9]$/.test(k)) ? parseOption(reply, keys) : parseLabel(reply, keys);
      }
      case 'ranking':
        return parseLabelList(
          reply,
          def.labels ? { labels: def.labels } : { pattern: new RegExp(def.label_pattern ?? '^\\S+$', 'u') },
          { max: def.k },
        );
      case 'multilabel':
        return parseLabelList(reply, { labels: def.classes }, { none: true });
      case 'tagging':
        return parseEntities(reply, raw[def.tokens] as string[], def.entity_types);
    }
  };
  return {
    version: first.version,
    system: first.system ?? DEFAULT_SYSTEM,
    instruction: () => `${first.instruction} ${format}`,
    render: renderer(def, first.template),
    answer: (gold, raw) =>
      def.type === 'tagging'
        ? JSON.stringify(
            getEntities(gold as string[]).map((e) => ({
              text: (raw[def.tokens] as string[]).slice(e.start, e.end + 1).join(' '),
              type: e.type,
            })),
          )
        : `Ответ: ${Array.isArray(gold) ? (gold.length > 0 ? gold.join(', ') : 'нет') : String(gold)}`,
    parse,
    ...(def.type !== 'tagging' && def.type !== 'multilabel'
      ? {
          loglik: {
            instruction: first.instruction,
            candidates: (_raw, ctx) => candidates(labels ?? ctx.labels ?? []),
          },
        }
      : {}),
    variants,
  };
}

/** The record's fields: the id, every input as text (a tagging task's tokens as a list) and the type's gold. */
function recordFields(def: TaskFile): RecordFields {
  const fields: Record<string, FieldRule> = { [def.id]: { type: 'text' } };
  for (const f of def.inputs)
    fields[f] = def.type === 'tagging' && f === def.tokens ? { type: 'tokens' } : { type: 'text' };
  if (def.cluster) fields[def.cluster] = { type: 'text' };
  switch (def.type) {
    case 'classification':
      fields[def.gold] = { type: 'label', optional: true, numbers: true, oneOf: def.labels };
      break;
    case 'multiple_choice':
      for (const f of Object.values(def.options)) fields[f] = { type: 'text' };
      if (def.question) fields[def.question] = { type: 'text' };
      fields[def.gold] = { type: 'label', optional: true, numbers: true, oneOf: Object.keys(def.options) };
      break;
    case 'ranking':
      fields[def.gold] = {
        type: 'label',
        optional: true,
        numbers: true,
        ...(def.labels
          ? { oneOf: def.labels }
          : def.label_pattern
            ? {
                pattern: new RegExp(def.label_pattern, 'u'),
                patternHint: `a label matching ${def.label_pattern}`,
              }
            : {}),
      };
      break;
    case 'tagging':
      fields[def.tokens] = { type: 'tokens' };
      fields[def.gold] = {
        type: 'tags',
        optional: true,
        oneOf: iob2Tags(def.entity_types),
        tokens: def.tokens,
      };
      break;
    case 'multilabel':
      fields[def.gold] = { type: 'label_set', optional: true, oneOf: def.classes };
      break;
  }
  return fields;
}

/** Turns a checked definition into a task; `file` is where it came from (data paths are relative to it). */
export function compileTask(
  def: TaskFile,
  file: string,
  options: { optional?: boolean } = {},
): TaskDefinition {
  const dir = dirname(file);
  const files: Partial<Record<Split, string>> = {};
  for (const [split, path] of Object.entries(def.files ?? {}))
    if (path) files[split as Split] = isAbsolute(path) ? path : resolve(dir, path);
  const splits = def.splits ?? SPLITS.filter((s) => files[s] !== undefined);
  const metrics: MetricName[] = def.metrics.map((m) =>
    m === 'hit_at_k' ? (`hit_at_${def.type === 'ranking' ? def.k : 3}` as HitAtK) : m,
  );
  const common = {
    name: def.name,
    title: def.title ?? def.description.split('\n')[0]?.slice(0, 80) ?? def.name,
    idField: def.id,
    goldField: def.gold,
    inputFields: def.inputs,
    ...(def.cluster ? { cluster: def.cluster } : {}),
    splits,
    guidelines: def.guidelines ?? def.description,
    inOverall: false,
    metrics,
    scoreOf: 'first' as const,
    prompt: compilePrompt(def),
    recordFields: recordFields(def),
    source: file,
    files,
    ...(options.optional ? { optional: true } : {}),
    ...(def.few_shot ? { shotsSplit: def.few_shot } : {}),
  };
  switch (def.type) {
    case 'classification':
      return {
        ...common,
        kind: 'classification',
        labels: def.labels,
        naiveLabel: def.naive_label ?? (def.labels[0] as string),
        ...(def.label_names ? { labelNames: def.label_names } : {}),
      };
    case 'multiple_choice': {
      const keys = Object.keys(def.options);
      return {
        ...common,
        kind: 'classification',
        labels: keys,
        naiveLabel: def.naive_label ?? (keys[0] as string),
        choices: { questionField: def.question ?? def.inputs[0] ?? def.id, optionFields: def.options },
      };
    }
    case 'ranking': {
      const re = def.labels
        ? new RegExp(
            `^(?:${def.labels.map((l) => l.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})$`,
            'u',
          )
        : new RegExp(def.label_pattern ?? '^\\S+$', 'u');
      return {
        ...common,
        kind: 'ranking',
        labelPattern: re,
        labelDescription: def.labels
          ? `one of the task's ${def.labels.length} labels`
          : `a label matching ${def.label_pattern ?? 'a word'}`,
        k: def.k,
        ...(def.labels ? { labels: def.labels } : {}),
      };
    }
    case 'tagging':
      return {
        ...common,
        kind: 'tagging',
        tokensField: def.tokens,
        entityTypes: def.entity_types,
        tags: iob2Tags(def.entity_types),
      };
    case 'multilabel':
      return { ...common, kind: 'multilabel', classes: def.classes };
  }
}

/** Reports a problem at a path of the definition (the YAML reader turns it into a line and column). */
export type Fail = (path: readonly PropertyKey[], reason: string, at?: 'key') => void;

/**
 * Checks a parsed definition: the schema of its type, then what a schema cannot say alone (metrics that fit the
 * type, fields named twice, a valid pattern). Every problem goes to `fail`; returns the definition where none did.
 */
export function checkTask(raw: unknown, fail: Fail): TaskFile | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    fail([], 'a task definition is a mapping (schema, name, type, …)');
    return undefined;
  }
  raw = shorthand(raw as Record<string, unknown>);
  const rawType = (raw as Record<string, unknown>).type;
  if (!TASK_TYPES.includes(rawType as TaskType)) {
    fail(['type'], `unknown type ${JSON.stringify(rawType)}; expected one of ${TASK_TYPES.join(', ')}`);
    return undefined;
  }
  const type = rawType as TaskType;
  const parsed = schemas().SCHEMAS[type].safeParse(raw);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      if (issue.code === 'unrecognized_keys')
        for (const key of issue.keys) fail([...issue.path, key], `unknown key for a ${type} task`, 'key');
      else fail(issue.path, issue.message);
    }
    return undefined;
  }
  const def = parsed.data;
  let ok = true;
  const bad: Fail = (path, reason) => {
    ok = false;
    fail(path, reason);
  };
  def.metrics.forEach((m, i) => {
    if (!METRICS_OF[def.type].includes(m))
      bad(
        ['metrics', i],
        `"${m}" does not fit a ${def.type} task; it takes ${METRICS_OF[def.type].join(', ')}`,
      );
  });
  if (new Set(def.metrics).size !== def.metrics.length) bad(['metrics'], 'a metric is listed twice');
  if (def.inputs.includes(def.id) || def.inputs.includes(def.gold))
    bad(['inputs'], 'the id and gold fields are not inputs a model reads');
  if (def.id === def.gold) bad(['gold'], 'the gold field cannot be the id field');
  if (!def.files && !def.splits)
    bad(['files'], 'name the data files by split, or list `splits` where the host holds the data');
  const ids = (def.prompts ?? []).map((p) => p.id);
  ids.forEach((id, i) => {
    if (ids.indexOf(id) !== i) bad(['prompts', i, 'id'], `prompt id "${id}" is used twice`);
  });
  const labels =
    def.type === 'classification'
      ? def.labels
      : def.type === 'multilabel'
        ? def.classes
        : def.type === 'ranking'
          ? def.labels
          : undefined;
  if (labels && new Set(labels).size !== labels.length)
    bad([def.type === 'multilabel' ? 'classes' : 'labels'], 'a label is listed twice');
  if (def.type === 'classification' && def.naive_label !== undefined && !def.labels.includes(def.naive_label))
    bad(['naive_label'], `"${def.naive_label}" is not one of the labels`);
  if (def.type === 'ranking') {
    if (def.labels && def.label_pattern) bad(['label_pattern'], 'give labels or label_pattern, not both');
    if (def.label_pattern)
      try {
        new RegExp(def.label_pattern, 'u');
      } catch (e) {
        bad(['label_pattern'], `not a regular expression: ${(e as Error).message}`);
      }
    if (def.metrics[0] !== 'accuracy' && def.metrics.includes('accuracy'))
      bad(['metrics'], 'list accuracy first, as the paper does');
  }
  if (def.type === 'tagging' && !def.inputs.includes(def.tokens))
    bad(['tokens'], `the tokens field "${def.tokens}" must be one of the inputs`);
  if (def.type === 'multiple_choice') {
    const opts = Object.values(def.options);
    if (opts.includes(def.id) || opts.includes(def.gold))
      bad(['options'], 'an option field cannot be the id or gold');
  }
  if (def.few_shot && def.files && !def.files[def.few_shot])
    bad(['few_shot'], `no "${def.few_shot}" file to draw examples from`);
  return ok ? def : undefined;
}

/**
 * Short forms a definition may use, written out: `license` for `licence`, one input as a string, multiple-choice
 * `options` as a list of fields (each field's name is then its key, as RuMedTest's "1"…"4"), `classes` as a count
 * (classes "0" … "N-1", as ECG2Pathology's indices), `few_shot: {split: dev}`.
 */
function shorthand(raw: Record<string, unknown>): Record<string, unknown> {
  const out = { ...raw };
  if (out.licence === undefined && out.license !== undefined) {
    out.licence = out.license;
    delete out.license;
  }
  if (typeof out.inputs === 'string') out.inputs = [out.inputs];
  if (
    out.type === 'multiple_choice' &&
    Array.isArray(out.options) &&
    out.options.every((f) => typeof f === 'string')
  )
    out.options = Object.fromEntries((out.options as string[]).map((f) => [f, f]));
  if (out.type === 'multilabel' && Number.isInteger(out.classes) && (out.classes as number) > 0)
    out.classes = Array.from({ length: out.classes as number }, (_, i) => String(i));
  const shots = out.few_shot as { split?: unknown } | undefined;
  if (typeof shots === 'object' && shots !== null && !Array.isArray(shots) && Object.keys(shots).length === 1)
    out.few_shot = shots.split;
  return out;
}

/** A definition already parsed (JSON, or built in code): problems named by their path in it. */
export function taskFromObject(
  raw: unknown,
  file: string,
  options: { optional?: boolean } = {},
): TaskDefinition {
  const problems: string[] = [];
  const def = checkTask(raw, (path, reason) =>
    problems.push(`${file}: ${path.length > 0 ? `${path.join('.')}: ` : ''}${reason}`),
  );
  if (!def) throw new TaskDefinitionError(file, problems);
  return compileTask(def, file, options);
}
