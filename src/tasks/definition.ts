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
import {
  parseEntities,
  parseIcd10List,
  parseLabel,
  parseLabelList,
  parseNli,
  parseOption,
  parseSymptomList,
  parseYesNo,
} from './parse.js';
import { type FieldRule, iob2Tags, type RecordFields } from './record.js';
import {
  DATA_DIR_MARK,
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

/**
 * The metric menu, and which fit which type; the first metric listed is the task's score's first part. For tagging,
 * `accuracy` and `f1` are upstream `eval.py`'s names for token accuracy and entity F1 (RuMedNER's columns).
 */
export const METRIC_MENU = [
  'accuracy',
  'hit_at_k',
  'macro_f1',
  'micro_f1',
  'entity_f1',
  'token_accuracy',
  'f1',
] as const;
const METRICS_OF: Record<TaskType, readonly (typeof METRIC_MENU)[number][]> = {
  classification: ['accuracy', 'macro_f1', 'micro_f1'],
  multiple_choice: ['accuracy', 'macro_f1', 'micro_f1'],
  ranking: ['accuracy', 'hit_at_k'],
  tagging: ['token_accuracy', 'entity_f1', 'accuracy', 'f1'],
  multilabel: ['macro_f1', 'micro_f1', 'accuracy'],
};

/**
 * Parsers a definition may name where its type's own does not fit: the built-in tasks' (yes/no with its Russian
 * paraphrases, NLI by word or number, ICD-10 codes, symptom names matched to the train inventory), each for the
 * type and labels it reads.
 */
export const PARSERS = [
  'label',
  'option',
  'label_list',
  'entities',
  'yes_no',
  'nli',
  'icd10',
  'symptoms',
] as const;
export type ParserName = (typeof PARSERS)[number];
const PARSERS_OF: Record<TaskType, readonly ParserName[]> = {
  classification: ['label', 'yes_no', 'nli'],
  multiple_choice: ['option', 'label'],
  ranking: ['label_list', 'icd10', 'symptoms'],
  tagging: ['entities'],
  multilabel: ['label_list'],
};
/** The labels a parser answers with, where it has its own. */
const PARSER_LABELS: Partial<Record<ParserName, readonly string[]>> = {
  yes_no: ['да', 'нет'],
  nli: ['entailment', 'contradiction', 'neutral'],
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

  /** A data field's rule (src/tasks/record.ts), where the type's default does not fit. */
  const fieldRule = z.strictObject({
    type: z.enum(['text', 'string', 'tokens', 'label']),
    optional: z.boolean().optional(),
    one_of: z.array(label).min(1).optional(),
    pattern: z.string().min(1).optional(),
    hint: z.string().min(1).optional(),
    numbers: z.boolean().optional(),
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
    /** For people (who may use the data, how): optional, as title and citation are. */
    licence: z.string().min(1).optional(),
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
    /** The answer-format sentence said with every instruction (`{format}` in it places it; else it follows). */
    format: z.string().min(1).optional(),
    parser: z.enum(PARSERS).optional(),
    loglik: z
      .strictObject({
        instruction: z.string().min(1).optional(),
        /** Label → the continuation scored for it (a space goes before it); absent: the label itself. */
        candidates: z.record(z.string().min(1), z.string().min(1)).optional(),
      })
      .optional(),
    /** The task's score: its first metric (the default), or the mean of its metrics (the paper's rule). */
    score: z.enum(['first', 'mean']).optional(),
    /** Counts towards RuMedOverall: the paper's five public tasks only (their shipped definitions). */
    in_overall: z.boolean().optional(),
    fields: z.record(field, fieldRule).optional(),
  };

  const SCHEMAS = {
    classification: z.strictObject({
      ...base,
      type: z.literal('classification'),
      labels: z.array(label).min(2),
      label_names: z.record(z.string(), z.string()).optional(),
      /** Keys an annotator may press for a label besides its number. */
      label_keys: z.record(z.string(), z.array(z.string().length(1))).optional(),
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
      /** What a label is, for messages ("a three-character ICD-10 code such as …"). */
      label_description: z.string().min(1).optional(),
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

/** The labels a reply is read against, where the definition fixes them (an open ranking reads the train inventory). */
function closedLabels(def: TaskFile): readonly string[] | undefined {
  switch (def.type) {
    case 'classification':
      return def.labels;
    case 'multiple_choice':
      return Object.keys(def.options);
    case 'ranking':
      return def.labels;
    default:
      return undefined;
  }
}

/** Reads a reply with the parser the definition names, else its type's own. */
function parserOf(def: TaskFile): TaskPrompt['parse'] {
  switch (def.parser) {
    case 'yes_no':
      return (reply) => parseYesNo(reply);
    case 'nli':
      return (reply) => parseNli(reply);
    case 'icd10': {
      const k = def.type === 'ranking' ? def.k : 3;
      return (reply) => parseIcd10List(reply, k);
    }
    case 'symptoms': {
      const k = def.type === 'ranking' ? def.k : 3;
      return (reply, _raw, ctx) => parseSymptomList(reply, ctx.labels ?? [], k);
    }
  }
  switch (def.type) {
    case 'classification':
      return (reply) => parseLabel(reply, def.labels);
    case 'multiple_choice': {
      const keys = Object.keys(def.options);
      return def.parser !== 'label' && keys.every((k) => /^[1-9]$/.test(k))
        ? (reply) => parseOption(reply, keys)
        : (reply) => parseLabel(reply, keys);
    }
    case 'ranking': {
      const match = def.labels
        ? { labels: def.labels }
        : { pattern: new RegExp(def.label_pattern ?? '^\\S+$', 'u') };
      return (reply) => parseLabelList(reply, match, { max: def.k });
    }
    case 'multilabel':
      return (reply) => parseLabelList(reply, { labels: def.classes }, { none: true });
    case 'tagging':
      return (reply, raw) => parseEntities(reply, raw[def.tokens] as string[], def.entity_types);
  }
}

const FORMAT_MARK = '{format}';
const LABELS_MARK = '{labels}';

/** The labels `{labels}` lists where the definition fixes them: its labels, option keys, classes or entity types. */
function listedLabels(def: TaskFile): readonly string[] | undefined {
  return def.type === 'multilabel'
    ? def.classes
    : def.type === 'tagging'
      ? def.entity_types
      : closedLabels(def);
}

/** `{labels}` filled: the definition's labels, else the train inventory (an open label set), `; ` apart. */
const fillLabels = (text: string, labels: readonly string[]) =>
  text.split(LABELS_MARK).join(labels.join('; '));

/**
 * An instruction as said: the answer format where `{format}` stands (else after it, a space apart), and the labels
 * where `{labels}` stands (for an open label set, as RuMedSymptomRec's symptoms, the train inventory of the run).
 */
function sayInstruction(
  text: string,
  format: string,
  fixed: readonly string[] | undefined,
): PromptVariant['instruction'] {
  const withFormat = text.includes(FORMAT_MARK) ? text.replace(FORMAT_MARK, format) : `${text} ${format}`;
  if (!withFormat.includes(LABELS_MARK)) return () => withFormat;
  if (fixed) {
    const said = fillLabels(withFormat, fixed);
    return () => said;
  }
  return (ctx) => fillLabels(withFormat, ctx.labels ?? []);
}

function compilePrompt(def: TaskFile): TaskPrompt {
  const prompts = def.prompts ?? [{ id: 'p1', version: `${def.name}-v1`, instruction: def.description }];
  const first = prompts[0] as (typeof prompts)[number];
  const format = def.format ?? answerFormat(def);
  const variants: PromptVariant[] = prompts.map((p) => ({
    id: p.id,
    version: p.version,
    instruction: sayInstruction(p.instruction, format, listedLabels(def)),
  }));
  const labels = closedLabels(def);
  const named = def.loglik?.candidates ?? {};
  const candidates = (list: readonly string[], labelWords: boolean | undefined) =>
    list.map((l) => ({ label: l, text: ` ${labelWords ? l : (named[l] ?? l)}` }));
  return {
    version: first.version,
    system: first.system ?? DEFAULT_SYSTEM,
    instruction: (variants[0] as PromptVariant).instruction,
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
    parse: parserOf(def),
    ...(def.type === 'tagging'
      ? {
          jsonSchema: {
            type: 'array',
            items: {
              type: 'object',
              properties: { text: { type: 'string' }, type: { enum: [...def.entity_types] } },
            },
          },
        }
      : {}),
    ...(def.type !== 'tagging' && def.type !== 'multilabel'
      ? {
          loglik: {
            instruction:
              def.loglik?.instruction ??
              fillLabels(first.instruction.replace(FORMAT_MARK, '').trim(), labels ?? []),
            candidates: (_raw, ctx, options) => candidates(labels ?? ctx.labels ?? [], options.labelWords),
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
  for (const [name, rule] of Object.entries(def.fields ?? {}))
    fields[name] = {
      type: rule.type,
      ...(rule.optional ? { optional: true } : {}),
      ...(rule.one_of ? { oneOf: rule.one_of } : {}),
      ...(rule.pattern ? { pattern: new RegExp(rule.pattern, 'u') } : {}),
      ...(rule.hint ? { patternHint: rule.hint } : {}),
      ...(rule.numbers ? { numbers: true } : {}),
    } as FieldRule;
  return fields;
}

/**
 * How a definition is read: `optional`, known by name but not among all tasks (ECG2Pathology); `builtin`, one of
 * the six tasks of the paper, shipped in the package (no `source`: every command treats it as built in).
 */
export interface CompileOptions {
  readonly optional?: boolean;
  readonly builtin?: boolean;
}

/** Turns a checked definition into a task; `file` is where it came from (data paths are relative to it). */
export function compileTask(def: TaskFile, file: string, options: CompileOptions = {}): TaskDefinition {
  const dir = dirname(file);
  const files: Partial<Record<Split, string>> = {};
  for (const [split, path] of Object.entries(def.files ?? {}))
    if (path)
      files[split as Split] = path.startsWith(DATA_DIR_MARK) || isAbsolute(path) ? path : resolve(dir, path);
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
    inOverall: def.in_overall ?? false,
    metrics,
    scoreOf: def.score ?? 'first',
    prompt: compilePrompt(def),
    recordFields: recordFields(def),
    ...(options.builtin ? {} : { source: file }),
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
        ...(def.label_keys ? { labelKeys: def.label_keys } : {}),
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
        labelDescription:
          def.label_description ??
          (def.labels
            ? `one of the task's ${def.labels.length} labels`
            : `a label matching ${def.label_pattern ?? 'a word'}`),
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
export function checkTask(raw: unknown, fail: Fail, options: CompileOptions = {}): TaskFile | undefined {
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
  if (def.in_overall && !options.builtin)
    bad(
      ['in_overall'],
      "RuMedOverall is the paper's mean over its five public tasks, which no other task joins: remove in_overall",
    );
  if (def.parser) {
    if (!PARSERS_OF[def.type].includes(def.parser))
      bad(
        ['parser'],
        `"${def.parser}" does not read a ${def.type} task; it takes ${PARSERS_OF[def.type].join(', ')}`,
      );
    const own = PARSER_LABELS[def.parser];
    const mine = closedLabels(def);
    if (own && (!mine || mine.length !== own.length || own.some((l) => !mine.includes(l))))
      bad(
        ['parser'],
        `the "${def.parser}" parser answers with the labels ${own.join(', ')}; the task's must be those`,
      );
    if (
      def.parser === 'option' &&
      def.type === 'multiple_choice' &&
      Object.keys(def.options).some((k) => !/^[1-9]$/.test(k))
    )
      bad(['parser'], 'the "option" parser reads option numbers 1-9; these keys are read by "label"');
    if (def.parser === 'symptoms' && def.type === 'ranking' && def.labels)
      bad(['parser'], 'the "symptoms" parser reads an open label set (the train inventory); drop `labels`');
  }
  if (def.loglik) {
    const labels = closedLabels(def);
    if (def.type === 'tagging' || def.type === 'multilabel')
      bad(['loglik'], `a ${def.type} task is not scored by log-likelihood`);
    else
      for (const key of Object.keys(def.loglik.candidates ?? {}))
        if (!labels?.includes(key))
          bad(
            ['loglik', 'candidates', key],
            labels ? `"${key}" is not one of the labels` : 'an open label set has no fixed candidates',
          );
  }
  const firstInstruction = def.prompts?.[0]?.instruction ?? '';
  if (
    firstInstruction.includes(LABELS_MARK) &&
    def.type === 'ranking' &&
    !def.labels &&
    !def.loglik?.instruction
  )
    bad(
      ['prompts', 0, 'instruction'],
      `lists ${LABELS_MARK}, which log-likelihood scoring cannot fill: give loglik.instruction, said before the candidates`,
    );
  for (const [name, rule] of Object.entries(def.fields ?? {})) {
    if (name === def.gold) {
      const labels = closedLabels(def);
      if (def.type === 'tagging' || def.type === 'multilabel')
        bad(['fields', name], `a ${def.type} task's gold is read by its type; it takes no rule here`);
      else if (rule.type !== 'label') bad(['fields', name, 'type'], 'the gold field is a label');
      else if (labels && rule.one_of?.some((l) => !labels.includes(l)))
        bad(['fields', name, 'one_of'], `the gold's labels must be among the task's: ${labels.join(', ')}`);
      if (!rule.optional)
        bad(
          ['fields', name, 'optional'],
          'the gold field is optional here: each command says where gold is needed',
        );
    }
    if (def.type === 'tagging' && name === def.tokens && rule.type !== 'tokens')
      bad(['fields', name, 'type'], 'the tokens field is a list of tokens');
    if (rule.type !== 'label' && (rule.one_of || rule.pattern || rule.hint || rule.numbers))
      bad(['fields', name], 'one_of, pattern, hint and numbers are rules of a label field');
    if (rule.pattern)
      try {
        new RegExp(rule.pattern, 'u');
      } catch (e) {
        bad(['fields', name, 'pattern'], `not a regular expression: ${(e as Error).message}`);
      }
  }
  if (def.type === 'classification' && def.label_keys)
    for (const key of Object.keys(def.label_keys))
      if (!def.labels.includes(key)) bad(['label_keys', key], `"${key}" is not one of the labels`);
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
export function taskFromObject(raw: unknown, file: string, options: CompileOptions = {}): TaskDefinition {
  const problems: string[] = [];
  const def = checkTask(
    raw,
    (path, reason) => problems.push(`${file}: ${path.length > 0 ? `${path.join('.')}: ` : ''}${reason}`),
    options,
  );
  if (!def) throw new TaskDefinitionError(file, problems);
  return compileTask(def, file, options);
}
