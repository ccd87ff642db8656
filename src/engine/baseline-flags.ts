/**
 * The flags of `rumedbench baseline METHOD`, declared once, each with the run spec field it fills (`to`) and the
 * methods that take it (`only`), as `llm`'s are (./llm-flags.ts): `baselineSpecOf` (src/cli/baseline.ts) makes a
 * spec from them, `commandLineOf` writes a spec back as them, a plan's encoder cells read their short forms through
 * them (src/plans/settings.ts), and docs/cli.md lists them.
 */
import { resolve } from 'node:path';
import { UsageError } from '../errors.js';
import { parseTaskList } from '../tasks/registry.js';
import * as flag from './flag-table.js';
import { BASELINE_DEFAULTS } from './spec.js';

/** The baselines, by the word `baseline` takes. */
export const BASELINE_METHODS = ['naive', 'tfidf', 'encoder', 'bilstm'] as const;

const positive = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`${name} must be a number > 0, got "${v}"`);
  return n;
};

/** Encoder flags of `baseline encoder` and `predict-encoder`; `prefix` says which commands use them. */
export const encoderFlags = (prefix: string) => ({
  dtype: flag.choice(
    '--dtype <type>',
    `${prefix}onnx/model.onnx (fp32) or onnx/model_quantized.onnx (q8); model.onnx beside config.json works too`,
    ['fp32', 'q8'],
  ),
  maxLength: flag.count('--max-length <n>', `${prefix}tokens per input (default: the model's limit)`, {
    min: 4,
  }),
  batchSize: flag.count('--batch-size <n>', `${prefix}inputs per forward pass (default 16)`, { min: 1 }),
});

const ENCODER = { only: ['encoder'] };
const BILSTM = { only: ['bilstm'] };
/** A flag bound to the encoder's field `key` (`encoder.<key>`), taken by `baseline encoder` alone. */
// biome-ignore lint/suspicious/noExplicitAny: a binding takes a flag of any value type
const encoderFlag = <F extends flag.Flag<any>>(
  key: string,
  spec: F,
  how: Omit<flag.FieldBinding<F extends flag.Flag<infer T> ? T : never>, 'path' | 'only'> = {},
): F => flag.to(`encoder.${key}`, spec, { ...how, ...ENCODER });
const absolute = { toField: (v: string) => resolve(v), isPath: true } as const;
const shared = encoderFlags('encoder: ');

export const BASELINE_FLAGS = {
  tasks: flag.to('tasks', flag.tasksFlag(), {
    toField: (v) => parseTaskList(v).map((t) => t.name),
    toValues: (v: string[]) => [v.join(',')],
  }),
  data: flag.to('data', flag.dataFlag(), absolute),
  gold: flag.to('gold', flag.goldDirFlag(), absolute),
  out: flag.text('--out <dir>', 'output folder for predictions/ and submission.zip', {
    default: 'baseline-out',
  }),
  save: flag.to('save', flag.text('--save <dir>', 'save each trained model under DIR/<Task>'), absolute),
  trainSplit: flag.to(
    'train_split',
    flag.choice('--train-split <split>', 'split to train on', ['train', 'dev'], {
      default: BASELINE_DEFAULTS.trainSplit,
    }),
  ),
  seed: flag.to('seed', flag.seedFlag('seed')),
  threads: flag.to(
    'threads',
    flag.count(
      '--threads <n>',
      'training threads (default: all cores; bilstm: 1 or 2, default 2 on 2 cores or more)',
      { min: 1 },
    ),
  ),
  epochs: flag.to(
    'epochs',
    flag.count('--epochs <n>', 'bilstm: epochs at most (default: 50 for classifiers, 20 for the tagger)', {
      min: 1,
    }),
    BILSTM,
  ),
  patience: flag.to(
    'patience',
    flag.count(
      '--patience <n>',
      'bilstm: stop once the dev loss failed to improve N times in all (default: 3 for classifiers; the tagger runs every epoch)',
      { min: 1 },
    ),
    BILSTM,
  ),
  bootstrap: flag.to('bootstrap', flag.bootstrapFlag('bootstrap resamples for the score')),
  model: encoderFlag(
    'model',
    flag.text(
      '--model <dir|id>',
      'encoder: model folder (config.json, tokenizer.json, onnx/model.onnx) or hub id',
    ),
  ),
  pooling: encoderFlag(
    'pooling',
    flag.choice('--pooling <how>', 'encoder: sentence vector', ['mean', 'cls']),
  ),
  endpoint: encoderFlag(
    'endpoint',
    flag.text(
      '--endpoint <url>',
      'encoder: sentence vectors from this OpenAI-compatible /v1/embeddings API (vLLM, TEI, Ollama) for --model NAME',
    ),
  ),
  apiKeyEnv: encoderFlag(
    'api_key_env',
    flag.text('--api-key-env <name>', "encoder: environment variable that holds the endpoint's key"),
  ),
  maxDimensions: encoderFlag(
    'max_dimensions',
    flag.count(
      '--max-dimensions <n>',
      'encoder --endpoint: dimensions of one vector at most; a wider answer is refused unread (default 16384)',
      { min: 1 },
    ),
  ),
  dtype: encoderFlag('dtype', shared.dtype),
  maxLength: encoderFlag('max_length', shared.maxLength),
  batchSize: encoderFlag('batch_size', shared.batchSize),
  C: encoderFlag(
    'C',
    flag.custom('--C <c>', 'encoder: inverse regularisation of the heads (default 1)', positive('--C')),
  ),
  cache: encoderFlag(
    'cache',
    flag.textOrOff(
      '--cache <dir>',
      'encoder: embedding cache folder (default: the user cache folder)',
      'encoder: embed everything afresh and keep nothing',
    ),
    { toField: (v) => (v === false ? false : resolve(v)), isPath: true },
  ),
  download: encoderFlag('download', flag.on('--no-download', 'encoder: never fetch a hub model')),
  json: flag.jsonFlag('print one JSON object (runs and evaluation) on stdout'),
} satisfies flag.FlagTable;
export type BaselineFlags = flag.FlagsOf<typeof BASELINE_FLAGS>;
