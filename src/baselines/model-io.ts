/**
 * Saving and loading baseline models: a folder with `model.json` (task, method, parameters, provenance) and one
 * raw little-endian file per numeric array, one JSON file per string table.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { Embedder } from '../encoders/embed.js';
import { ModelError } from '../errors.js';
import { getTask, isTaskName } from '../tasks/registry.js';
import { VERSION } from '../version.js';
import { loadBilstm } from './bilstm.js';
import { type EncoderRef, loadEncoderModel, openSavedEncoder } from './encoder.js';
import { naiveModel } from './naive.js';
import { loadTfidf } from './tfidf.js';
import type { BaselineModel, SerializedModel } from './types.js';

const MODEL_FORMAT_VERSION = 1;

const ARRAY_TYPES = { f32: Float32Array, f64: Float64Array, i32: Int32Array } as const;
type ArrayType = keyof typeof ARRAY_TYPES;

const manifestSchema = z.object({
  format: z.literal('rumedbench-model'),
  format_version: z.literal(MODEL_FORMAT_VERSION),
  rumedbench_version: z.string(),
  task: z.string(),
  method: z.enum(['naive', 'tfidf', 'encoder', 'bilstm']),
  trained_on: z.object({ split: z.string(), records: z.number() }),
  meta: z.record(z.string(), z.unknown()),
  arrays: z.record(
    z.string(),
    z.object({ file: z.string(), type: z.enum(['f32', 'f64', 'i32']), length: z.number() }),
  ),
  strings: z.record(z.string(), z.string()),
});

export type ModelManifest = z.infer<typeof manifestSchema>;

function typeOf(a: Float32Array | Float64Array | Int32Array): ArrayType {
  return a instanceof Float32Array ? 'f32' : a instanceof Float64Array ? 'f64' : 'i32';
}

export function saveModel(
  dir: string,
  model: BaselineModel,
  trainedOn: { split: string; records: number },
): void {
  mkdirSync(dir, { recursive: true });
  const s = model.serialize();
  const arrays: ModelManifest['arrays'] = {};
  for (const [name, a] of Object.entries(s.arrays)) {
    const type = typeOf(a);
    const file = `${name}.${type}`;
    writeFileSync(join(dir, file), new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
    arrays[name] = { file, type, length: a.length };
  }
  const strings: Record<string, string> = {};
  for (const [name, list] of Object.entries(s.strings)) {
    strings[name] = `${name}.json`;
    writeFileSync(join(dir, `${name}.json`), JSON.stringify(list));
  }
  const manifest: ModelManifest = {
    format: 'rumedbench-model',
    format_version: MODEL_FORMAT_VERSION,
    rumedbench_version: VERSION,
    task: model.task.name,
    method: model.method,
    trained_on: trainedOn,
    meta: s.meta,
    arrays,
    strings,
  };
  writeFileSync(join(dir, 'model.json'), `${JSON.stringify(manifest, null, 2)}\n`);
}

interface LoadModelOptions {
  /** Opens the encoder of saved encoder heads on first use; by default the folder or hub id they name. */
  openEncoder?: (ref: EncoderRef) => Promise<Embedder>;
}

/** Loads a saved model; `expectTask` (the `--task` flag) must match the task it was trained for. */
export function loadModel(
  dir: string,
  expectTask?: string,
  options: LoadModelOptions = {},
): { model: BaselineModel; manifest: ModelManifest } {
  const path = join(dir, 'model.json');
  if (!existsSync(path))
    throw new ModelError(dir, 'no model.json here; save a model with `rumedbench baseline … --save DIR`');
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new ModelError(dir, `model.json is not JSON (${(e as Error).message})`);
  }
  const m = manifestSchema.safeParse(parsed);
  if (!m.success) {
    const issue = m.error.issues[0];
    throw new ModelError(
      dir,
      `model.json: field "${issue?.path.join('.')}": ${issue?.message} (format version ${MODEL_FORMAT_VERSION} expected)`,
    );
  }
  const manifest = m.data;
  if (!isTaskName(manifest.task)) throw new ModelError(dir, `trained for unknown task "${manifest.task}"`);
  if (expectTask !== undefined && expectTask !== manifest.task) {
    throw new ModelError(dir, `this model was trained for ${manifest.task}, not ${expectTask}`);
  }
  const task = getTask(manifest.task);
  const saved: SerializedModel = { meta: manifest.meta, arrays: {}, strings: {} };
  for (const [name, a] of Object.entries(manifest.arrays)) {
    const file = join(dir, a.file);
    if (!existsSync(file)) throw new ModelError(dir, `${a.file} is missing`);
    const bytes = readFileSync(file);
    const Ctor = ARRAY_TYPES[a.type];
    if (bytes.byteLength !== a.length * Ctor.BYTES_PER_ELEMENT) {
      throw new ModelError(
        dir,
        `${a.file}: ${bytes.byteLength} bytes, expected ${a.length * Ctor.BYTES_PER_ELEMENT}`,
      );
    }
    // Copy into an aligned buffer of its own (Buffer slices may share an unaligned pool).
    const copy = new Uint8Array(bytes.byteLength);
    copy.set(bytes);
    saved.arrays[name] = new Ctor(copy.buffer);
  }
  for (const [name, file] of Object.entries(manifest.strings)) {
    const p = join(dir, file);
    if (!existsSync(p)) throw new ModelError(dir, `${file} is missing`);
    saved.strings[name] = JSON.parse(readFileSync(p, 'utf8')) as string[];
  }
  let model: BaselineModel;
  if (manifest.method === 'naive') model = naiveModel(task, (manifest.meta as { params: object }).params);
  else if (manifest.method === 'tfidf') model = loadTfidf(task, saved);
  else if (manifest.method === 'bilstm') {
    try {
      model = loadBilstm(task, saved, 'model.json');
    } catch (e) {
      throw new ModelError(dir, (e as Error).message);
    }
  } else {
    model = loadEncoderModel(task, saved, options.openEncoder ?? ((ref) => openSavedEncoder(ref)));
  }
  return { model, manifest };
}
