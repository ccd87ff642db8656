/**
 * Reading a task definition file (YAML, or JSON, which YAML reads): every problem named as `file:line:col: reason`.
 * The YAML parser is required when a file is first read (about 40 ms), not when this module is imported: the run
 * specs import this module, and most runs read no definition.
 */
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import type { Node } from 'yaml';
import { RumedbenchError, TaskDefinitionError } from '../errors.js';
import { readUtf8File } from '../utf8.js';
import { type CompileOptions, checkTask, compileTask, type TaskFile } from './definition.js';
import type { TaskDefinition } from './types.js';

/** Checks a definition file's text; throws every problem at once. */
export function parseTaskFile(source: string, file: string, options: CompileOptions = {}): TaskFile {
  const { isMap, isScalar, LineCounter, parseDocument } = createRequire(import.meta.url)(
    'yaml',
  ) as typeof import('yaml');
  const lineCounter = new LineCounter();
  const doc = parseDocument(source, { lineCounter, uniqueKeys: true, prettyErrors: false });
  const at = (offset: number) => {
    const { line, col } = lineCounter.linePos(offset);
    return `${file}:${line}:${col}`;
  };
  const problems: string[] = doc.errors.map((e) => `${at(e.pos[0])}: ${e.message.split('\n')[0]}`);
  if (problems.length > 0) throw new TaskDefinitionError(file, problems);
  if (!isMap(doc.contents))
    throw new TaskDefinitionError(file, [`${at(0)}: a task definition is a mapping (schema, name, type, …)`]);
  /** The node at a path (its key, for `key`), or the nearest one above it that exists. */
  const nodeAt = (path: readonly PropertyKey[], key?: 'key'): Node | undefined => {
    if (key) {
      const parent = path.length === 1 ? doc.contents : doc.getIn(path.slice(0, -1) as unknown[], true);
      const pair = isMap(parent)
        ? parent.items.find((p) => isScalar(p.key) && String(p.key.value) === String(path.at(-1)))
        : undefined;
      if (pair && isScalar(pair.key)) return pair.key;
    }
    for (let n = path.length; n >= 0; n--) {
      const node = doc.getIn(path.slice(0, n) as unknown[], true) as Node | undefined;
      if (node && typeof node === 'object' && 'range' in node) return node;
    }
    return doc.contents ?? undefined;
  };
  const def = checkTask(
    doc.toJS(),
    (path, reason, key) =>
      problems.push(
        `${at(nodeAt(path, key)?.range?.[0] ?? 0)}: ${path.length > 0 ? `${path.join('.')}: ` : ''}${reason}`,
      ),
    options,
  );
  if (!def) throw new TaskDefinitionError(file, problems);
  return def;
}

/** Two lines that are each a JSON object: the start of a JSONL data file (YAML would report every line of it). */
function looksLikeJsonl(source: string): boolean {
  const lines = source
    .split('\n')
    .filter((l) => l.trim() !== '')
    .slice(0, 2);
  return (
    lines.length === 2 &&
    lines.every((l) => {
      try {
        const v = JSON.parse(l) as unknown;
        return typeof v === 'object' && v !== null && !Array.isArray(v);
      } catch {
        return false;
      }
    })
  );
}

const notADefinition = (file: string): TaskDefinitionError =>
  new TaskDefinitionError(file, [
    `${file}: this is a data file (JSONL: one record per line), not a task definition; a definition (.yaml, .yml or .json) names it under files:`,
  ]);

/**
 * Reads, checks and compiles one definition file; its data paths are relative to it. The file is read as every user
 * file is (src/utf8.ts, as data files): strict UTF-8, a file in another encoding refused once (BAD_ENCODING, naming
 * Windows-1251 or UTF-16) rather than read with replacement characters that would reach a model's prompt.
 */
export function loadTaskFile(file: string, options: CompileOptions = {}): TaskDefinition {
  // A data file given where its definition belongs (`--tasks-dir data/test.jsonl`): said once, not per line.
  if (/\.jsonl$/i.test(file)) throw notADefinition(file);
  let source: string;
  try {
    source = readUtf8File(file);
  } catch (e) {
    if (e instanceof RumedbenchError) throw e;
    throw new TaskDefinitionError(file, [
      `${file}: cannot read the task definition (${(e as NodeJS.ErrnoException).code ?? String(e)})`,
    ]);
  }
  if (looksLikeJsonl(source)) throw notADefinition(file);
  return compileTask(parseTaskFile(source, file, options), resolve(file), options);
}
