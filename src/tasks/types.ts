/**
 * The shape of a task. Each task is described once, in a definition file (the built-in ones in the package's
 * `tasks/` folder), compiled to this shape by src/tasks/definition.ts; loaders, the scorer, baselines, prompts and
 * reports read only these.
 */
import type { ParseResult } from './parse.js';
import type { RecordFields } from './record.js';

export const SPLITS = ['train', 'dev', 'test', 'private_test'] as const;

/** A defined task's data file whose path starts with this is under the data folder (`--data`, `RUMEDBENCH_DATA`). */
export const DATA_DIR_MARK = '{data}/';
export type Split = (typeof SPLITS)[number];

/**
 * Metric names as they appear in results (`tasks.<Task>.metrics`). Values are percentages, 0-100. The built-in
 * tasks use `accuracy`, `hit_at_3` and `f1` (RuMedNER's entity F1), as upstream `eval.py` names them; tasks defined
 * in a file may also ask for the others (src/tasks/definition.ts lists which fit which type).
 */
export type MetricName =
  | 'accuracy'
  | 'f1'
  | 'macro_f1'
  | 'micro_f1'
  | 'token_accuracy'
  | 'entity_f1'
  | HitAtK;

/** Hit@k of a ranking task, for k from 1 to 10 (a defined task's `k`). */
export type HitAtK = `hit_at_${1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10}`;

/**
 * How predictions look and are scored:
 * - `ranking`: a ranked list of up to k (3) labels; accuracy of the first, Hit@k of the list.
 * - `classification`: one label from a closed set; accuracy (macro or micro F1 where a task asks).
 * - `tagging`: one IOB2 tag per token; token accuracy and entity-level micro F1 (seqeval's default mode).
 * - `multilabel`: a set of classes per item; macro or micro F1 over the classes, exact-match accuracy.
 */
export type TaskKind = 'ranking' | 'classification' | 'tagging' | 'multilabel';

/** What a prompt or a parser may need beyond the record: the train label inventory, for open label spaces. */
export interface PromptContext {
  readonly labels?: readonly string[];
}

/**
 * How a language model is asked the task and how its reply is read. Russian text; the reply's last line carries
 * the answer in a stated form, which the task's parser reads (see src/tasks/parse.ts).
 */
export interface TaskPrompt {
  /** Bumped whenever the wording changes, so runs and caches with other wording are told apart. */
  readonly version: string;
  readonly system: string;
  instruction(ctx: PromptContext): string;
  /** The item as the model sees it. */
  render(raw: Readonly<Record<string, unknown>>): string;
  /** A gold answer written as the model should write it (k-shot examples). */
  answer(gold: string | readonly string[], raw: Readonly<Record<string, unknown>>): string;
  parse(
    reply: string,
    raw: Readonly<Record<string, unknown>>,
    ctx: PromptContext,
  ): ParseResult<string | string[]>;
  /** A JSON schema of the reply, for engines that constrain decoding to it. */
  readonly jsonSchema?: object;
  /** How the task is asked for scoring by log-likelihood; absent where it stays generative (RuMedNER). */
  readonly loglik?: LoglikSpec;
  /**
   * Other formulations of the instruction, for prompt sensitivity (`llm --prompts`): each with a stable id and
   * version, each asking for the answer in the same form, so the same parser reads them. p1 is `instruction` itself.
   */
  readonly variants: readonly PromptVariant[];
}

export interface PromptVariant {
  readonly id: string;
  readonly version: string;
  instruction(ctx: PromptContext): string;
}

/**
 * Scoring by log-likelihood: the prompt ends in "Ответ:" and each candidate answer is a continuation of it (with its
 * leading space), scored by the model's log-probability.
 */
interface LoglikSpec {
  /** The instruction; candidates that are scored need not be listed in it. */
  readonly instruction: string;
  /** The continuations to score and the label each stands for. `labelWords`: label words instead of option numbers. */
  candidates(
    raw: Readonly<Record<string, unknown>>,
    ctx: PromptContext,
    options: { labelWords?: boolean },
  ): { label: string; text: string }[];
}

interface TaskBase<Name extends string = string> {
  readonly name: Name;
  /** One line for tables and `--help`. */
  readonly title: string;
  readonly idField: string;
  /** The gold field of the data; in the MedBench platform format the same field carries the prediction. */
  readonly goldField: string;
  /** Fields that a model reads. */
  readonly inputFields: readonly string[];
  /**
   * A field shared by items that are not independent (RuMedNLI's hypotheses share their premise): their standard
   * errors are clustered by it and resampling draws whole clusters (metrics/ranking.ts). Absent: items independent.
   */
  readonly cluster?: string;
  /** Splits published upstream (RuMedTest exists only as a private test with closed answers). */
  readonly splits: readonly Split[];
  /** Instructions for people who answer the task in a human evaluation campaign (Russian; editable per campaign). */
  readonly guidelines: string;
  /** Whether the task counts towards RuMedOverall (the paper's five public tasks). */
  readonly inOverall: boolean;
  readonly metrics: readonly MetricName[];
  readonly prompt: TaskPrompt;
  /**
   * What one data record holds, a rule per field (src/tasks/record.ts); the gold field is optional here, the loader
   * decides where it is required.
   */
  readonly recordFields: RecordFields;
  /** Where a task defined in a file came from (the definition file); absent for the built-in tasks. */
  readonly source?: string;
  /**
   * A defined task's data files by split (absolute, or under the data folder: `{data}/…`); absent:
   * `<data>/<Task>/<split>_v1.jsonl`.
   */
  readonly files?: Readonly<Partial<Record<Split, string>>>;
  /**
   * Known by name but not among "all tasks" when none are named (ECG2Pathology ships as a definition without data:
   * a file of it is scored where its gold is given, yet no command asks for it unasked).
   */
  readonly optional?: boolean;
  /**
   * What the task's score is: the mean of its metrics (`mean`, the paper's rule for the built-in tasks, and the
   * default), or its first metric (`first`: tasks defined in files, whose first metric is the score).
   */
  readonly scoreOf?: 'mean' | 'first';
  /** The split few-shot examples come from, where the definition names one. */
  readonly shotsSplit?: Split;
}

export interface RankingTask<Name extends string = string> extends TaskBase<Name> {
  readonly kind: 'ranking';
  /** Labels must match this pattern; where they are outside the train inventory they are counted, not rejected. */
  readonly labelPattern: RegExp;
  readonly labelDescription: string;
  /** How many labels a prediction may list (Hit@k); 3 where absent, as in RuMedTop3 and RuMedSymptomRec. */
  readonly k?: number;
  /** A closed label set, where the definition gives one; predictions outside it are then rejected. */
  readonly labels?: readonly string[];
}

export interface ClassificationTask<Name extends string = string> extends TaskBase<Name> {
  readonly kind: 'classification';
  readonly labels: readonly string[];
  /** How a label reads to a person (Russian), where it is not self-explanatory. */
  readonly labelNames?: Readonly<Record<string, string>>;
  /** Keys an annotator may press for a label besides its number (the guidelines name them). */
  readonly labelKeys?: Readonly<Record<string, readonly string[]>>;
  /** The paper's naive baseline: this label for every item. */
  readonly naiveLabel: string;
  /**
   * For multiple-choice tasks: the question field and, per label, the field holding that option's text. The
   * feature-based baseline then picks the option closest to the question instead of training a classifier.
   */
  readonly choices?: {
    readonly questionField: string;
    readonly optionFields: Readonly<Record<string, string>>;
  };
}

export interface TaggingTask<Name extends string = string> extends TaskBase<Name> {
  readonly kind: 'tagging';
  readonly tokensField: string;
  readonly entityTypes: readonly string[];
  /** `O` plus `B-`/`I-` of each entity type. */
  readonly tags: readonly string[];
}

/** Several classes per item (ECG2Pathology: PTB-XL records, 73 classes); gold and predictions are class lists. */
export interface MultilabelTask<Name extends string = string> extends TaskBase<Name> {
  readonly kind: 'multilabel';
  readonly classes: readonly string[];
}

export type TaskDefinition<Name extends string = string> =
  | RankingTask<Name>
  | ClassificationTask<Name>
  | TaggingTask<Name>
  | MultilabelTask<Name>;

/** A validated data record: the raw object plus the fields every consumer needs. */
export interface TaskRecord {
  readonly id: string;
  /**
   * Gold answer: a label (string), a tag sequence or a class set (string[]); undefined where the split has no
   * public gold.
   */
  readonly gold: string | readonly string[] | undefined;
  readonly raw: Readonly<Record<string, unknown>>;
  /** 1-based line in its file. */
  readonly line: number;
}
