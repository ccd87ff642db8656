/**
 * An evaluation plan: many models × settings in one YAML or JSON file (JSON is read as the YAML it also is), so that
 * each problem is named with its line and column. A setting is a run spec's field (`./settings.ts`), checked where
 * it stands by the spec's own schema; an old key (a flag's name) is read as its field with a warning.
 */

import { existsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { isMap, isScalar, isSeq, LineCounter, type Node, type Pair, parseDocument, type YAMLMap } from 'yaml';
import { readUtf8File } from '../data/text.js';
import { secretHeaderProblem } from '../engine/spec.js';
import { PlanError, TaskDefinitionError, UsageError } from '../errors.js';
import { isTaskName, TASKS } from '../tasks/registry.js';
import { loadUserTasks } from '../tasks/user.js';
import { type Cell, expandPlan } from './cells.js';
import type { Plan, PlanModel } from './plan.js';
import { type PlanProvider, planProviders, RENAMED, renamedAs, specValueOf } from './settings.js';

export type { Plan, PlanModel } from './plan.js';
export type { PlanProvider, Setting } from './settings.js';

/** Keys the plan sets for every cell itself, and steps of one run by hand (a batch file written or read). */
const RESERVED = new Set([
  'out',
  'json',
  'resume',
  'retry_errors',
  'progress',
  'quiet',
  'provider',
  'batch_file',
  'batch_results',
]);
/** Keys that would hold a secret: a plan names the environment variable instead. */
const SECRET_KEY = /^(api[_-]?key|key|token|secret|password|authorization)$/i;
const MODEL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

const PLAN_KEYS = [
  'name',
  'split',
  'tasks',
  'tasks_dir',
  'data',
  'defaults',
  'models',
  'matrix',
  'max_in_flight',
  'retry_rounds',
  'retry_delay_s',
];

/** Reads and checks a plan; every problem is collected and thrown at once, as `file:line:col: reason`. */
export function parsePlan(
  text: string,
  file: string,
  providers: Readonly<Record<string, PlanProvider>> = planProviders(),
): Plan {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false });
  const where = (node: Node | null | undefined): string => {
    const offset = node?.range?.[0] ?? 0;
    const { line, col } = lineCounter.linePos(offset);
    return `${file}:${line}:${col}`;
  };
  const problems: string[] = [];
  const warnings: string[] = [];
  const fail = (node: Node | null | undefined, reason: string) => problems.push(`${where(node)}: ${reason}`);
  for (const e of doc.errors) {
    const { line, col } = lineCounter.linePos(e.pos[0]);
    problems.push(`${file}:${line}:${col}: ${e.message.split('\n')[0]}`);
  }
  if (problems.length > 0) throw new PlanError(file, problems);
  const root = doc.contents;
  if (!isMap(root))
    throw new PlanError(file, [`${where(root)}: a plan is a mapping of name, tasks, models, …`]);

  const pairs = new Map<string, Pair>();
  for (const pair of root.items) {
    const key = keyOf(pair);
    if (!PLAN_KEYS.includes(key))
      fail(pair.key as Node, `unknown key "${key}"; a plan takes ${PLAN_KEYS.join(', ')}`);
    else pairs.set(key, pair);
  }
  const valueAt = (key: string) => pairs.get(key)?.value as Node | null | undefined;
  const js = (node: Node | null | undefined): unknown => (node ? node.toJSON() : undefined);

  const name = js(valueAt('name'));
  if (typeof name !== 'string' || name.trim() === '')
    fail(valueAt('name') ?? root, 'name: a text naming the plan');
  const split = js(valueAt('split')) ?? 'test';
  if (split !== 'test' && split !== 'private_test' && split !== 'both')
    fail(valueAt('split'), `split: one of test, private_test, both, got ${JSON.stringify(split)}`);
  // Task definitions first (relative to the plan), so that the tasks they define can be named below.
  const tasksDirNode = valueAt('tasks_dir');
  if (tasksDirNode) {
    const raw = js(tasksDirNode);
    const dirs = typeof raw === 'string' ? [raw] : raw;
    if (!Array.isArray(dirs) || dirs.length === 0 || !dirs.every((d) => typeof d === 'string' && d !== ''))
      fail(
        tasksDirNode,
        'tasks_dir: a task definition file or folder, or a list of them (relative to the plan)',
      );
    else
      try {
        loadUserTasks((dirs as string[]).map((d) => resolve(dirname(file), d)));
      } catch (e) {
        if (e instanceof TaskDefinitionError || e instanceof UsageError)
          fail(tasksDirNode, `tasks_dir: ${e.message}`);
        else throw e;
      }
  }
  let tasks: string[] = TASKS.map((t) => t.name);
  const tasksNode = valueAt('tasks');
  if (tasksNode) {
    const raw = js(tasksNode);
    const list = typeof raw === 'string' ? raw.split(',').map((s) => s.trim()) : raw;
    if (!Array.isArray(list) || list.length === 0 || !list.every((t) => typeof t === 'string'))
      fail(tasksNode, 'tasks: a list of task names');
    else {
      tasks = list as string[];
      const items = isSeq(tasksNode) ? tasksNode.items : [];
      tasks.forEach((t, i) => {
        if (!isTaskName(t))
          fail(
            (items[i] as Node | undefined) ?? tasksNode,
            `unknown task "${t}"; the tasks are ${TASKS.map((x) => x.name).join(', ')}`,
          );
      });
    }
  }
  const data = js(valueAt('data'));
  if (data !== undefined && typeof data !== 'string') fail(valueAt('data'), 'data: a folder path');
  const maxInFlight = js(valueAt('max_in_flight'));
  if (maxInFlight !== undefined && !(Number.isInteger(maxInFlight) && (maxInFlight as number) >= 1))
    fail(valueAt('max_in_flight'), 'max_in_flight: a whole number ≥ 1 (requests in flight per endpoint)');
  const retryRounds = js(valueAt('retry_rounds'));
  if (retryRounds !== undefined && !(Number.isInteger(retryRounds) && (retryRounds as number) >= 0))
    fail(
      valueAt('retry_rounds'),
      'retry_rounds: a whole number ≥ 0 (rounds in which failed requests go back to the queue)',
    );
  const retryDelayS = js(valueAt('retry_delay_s'));
  if (retryDelayS !== undefined && !(Number.isInteger(retryDelayS) && (retryDelayS as number) >= 0))
    fail(valueAt('retry_delay_s'), 'retry_delay_s: a whole number of seconds ≥ 0 (doubled each round)');

  const anyTakes = (key: string) => Object.values(providers).some((p) => p.settings.has(key));
  /**
   * An old key read as its field, said once where it stands; the key as the spec names it. A key that is both an old
   * name and a field of its own (none now) would be read as the field.
   */
  const renamed = (keyNode: Node, key: string): string => {
    const to = RENAMED[key];
    if (to === undefined || anyTakes(key)) return key;
    warnings.push(
      `${where(keyNode)}: "${key}" is an old name; write ${renamedAs(to)} (the run spec's field): it is read as that for now`,
    );
    return to;
  };
  /** Checks one setting against every provider that takes it (or only `only`); its value in the spec's form. */
  const checkSetting = (keyNode: Node, valueNode: Node | null, key: string, only?: PlanProvider): unknown => {
    if (RESERVED.has(key))
      return void fail(keyNode, `"${key}" is set by the plan itself and cannot be given`);
    if (SECRET_KEY.test(key))
      return void fail(
        keyNode,
        `"${key}": a secret in the plan file; put it in an environment variable and name that with api_key_env`,
      );
    let value: unknown;
    try {
      value = specValueOf(key, js(valueNode), file);
    } catch (e) {
      if (!(e instanceof Error)) throw e;
      return void fail(valueNode ?? keyNode, `${key}: ${(e as Error).message}`);
    }
    // A credential written as a header's value is named as such, before any other check of the value.
    if (key === 'headers' && typeof value === 'object' && value !== null) {
      const secret = Object.keys(value)
        .map((name) => secretHeaderProblem(name))
        .find((p) => p !== undefined);
      if (secret) return void fail(valueNode ?? keyNode, secret);
    }
    const specs = only ? [only] : Object.values(providers).filter((p) => p.settings.has(key));
    if (specs.length === 0) return void fail(keyNode, `unknown setting "${key}"`);
    for (const p of specs) {
      try {
        p.settings.get(key)?.check(value);
      } catch (e) {
        fail(valueNode ?? keyNode, `${key}: ${(e as Error).message}`);
        return;
      }
    }
    return value;
  };
  const settingsOf = (
    node: Node | null | undefined,
    what: string,
    only?: PlanProvider,
    skip: string[] = [],
  ) => {
    const out: Record<string, unknown> = {};
    if (node === undefined || node === null) return out;
    if (!isMap(node)) {
      fail(node, `${what}: a mapping of settings`);
      return out;
    }
    for (const pair of (node as YAMLMap).items) {
      if (skip.includes(keyOf(pair))) continue;
      const key = renamed(pair.key as Node, keyOf(pair));
      if (!only && !anyTakes(key) && !RESERVED.has(key) && !SECRET_KEY.test(key)) {
        fail(pair.key as Node, `unknown setting "${key}" in ${what}`);
        continue;
      }
      out[key] = checkSetting(pair.key as Node, pair.value as Node | null, key, only);
    }
    return out;
  };

  const defaults = settingsOf(valueAt('defaults'), 'defaults');

  const models: PlanModel[] = [];
  const modelsNode = valueAt('models');
  if (!isSeq(modelsNode) || modelsNode.items.length === 0)
    fail(modelsNode ?? root, 'models: a list of at least one model');
  else {
    const seen = new Map<string, Node>();
    for (const item of modelsNode.items as Node[]) {
      if (!isMap(item)) {
        fail(item, 'a model is a mapping: {name, provider, model, …}');
        continue;
      }
      const get = (k: string) => item.items.find((p) => keyOf(p) === k)?.value as Node | undefined;
      const mname = js(get('name'));
      const provider = js(get('provider'));
      if (typeof mname !== 'string' || !MODEL_NAME.test(mname)) {
        fail(get('name') ?? item, 'name: letters, digits, ".", "_" or "-" (it names the model\'s folder)');
        continue;
      }
      if (seen.has(mname))
        fail(get('name'), `duplicate model name "${mname}" (first at ${where(seen.get(mname))})`);
      seen.set(mname, get('name') as Node);
      const spec = typeof provider === 'string' ? providers[provider] : undefined;
      if (!spec || !Object.hasOwn(providers, provider as string)) {
        fail(
          get('provider') ?? item,
          `provider: one of ${Object.keys(providers).join(', ')}, got ${JSON.stringify(provider)}`,
        );
        continue;
      }
      const settings = settingsOf(item, `model ${mname}`, spec, ['name', 'provider']);
      for (const pair of item.items) {
        const k = RENAMED[keyOf(pair)] ?? keyOf(pair);
        if (
          k !== 'name' &&
          k !== 'provider' &&
          !spec.settings.has(k) &&
          !RESERVED.has(k) &&
          !SECRET_KEY.test(k)
        )
          fail(pair.key as Node, `"${k}" is not a setting of provider ${provider}`);
      }
      if (!('model' in settings) && !('model' in defaults))
        fail(item, `model ${mname}: no "model" (a name, path or hub id)`);
      models.push({ name: mname, provider: provider as string, settings, where: where(item) });
    }
  }

  const matrix: [string, unknown[]][] = [];
  const matrixNode = valueAt('matrix');
  if (matrixNode !== undefined && matrixNode !== null) {
    if (!isMap(matrixNode)) fail(matrixNode, 'matrix: a mapping of setting → list of values');
    else
      for (const pair of matrixNode.items) {
        const key = renamed(pair.key as Node, keyOf(pair));
        const values = pair.value as Node | null;
        if (!isSeq(values) || values.items.length === 0) {
          fail(values ?? (pair.key as Node), `matrix.${key}: a list of at least one value`);
          continue;
        }
        if (!anyTakes(key)) {
          fail(
            pair.key as Node,
            RESERVED.has(key) ? `"${key}" is set by the plan itself` : `unknown setting "${key}" in matrix`,
          );
          continue;
        }
        matrix.push([key, (values.items as Node[]).map((v) => checkSetting(pair.key as Node, v, key))]);
      }
  }

  if (problems.length > 0) throw new PlanError(file, problems);
  return {
    file,
    name: name as string,
    split: split as Plan['split'],
    tasks,
    ...(typeof data === 'string' ? { data } : {}),
    defaults,
    models,
    matrix,
    ...(typeof maxInFlight === 'number' ? { maxInFlight } : {}),
    ...(typeof retryRounds === 'number' ? { retryRounds } : {}),
    ...(typeof retryDelayS === 'number' ? { retryDelayS } : {}),
    warnings,
  };
}

function keyOf(pair: Pair): string {
  return isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
}

/** The largest plan file read: a plan is a page of YAML; a 100 MB one took minutes and gigabytes to refuse. */
export const MAX_PLAN_BYTES = 1 << 20;

/**
 * A plan file read, checked and expanded into its cells: what `plan check`, `plan run` and `plan submit` start from.
 * `warnings` are the old keys read as their fields, one line each; `notes` what a provider leaves out.
 */
export function loadPlan(file: string): { plan: Plan; cells: Cell[]; notes: string[]; warnings: string[] } {
  const path = resolve(file);
  // A missing file is left to the reader, which names it as every command does.
  const size = existsSync(path) ? statSync(path).size : 0;
  if (size > MAX_PLAN_BYTES)
    throw new UsageError(
      `${file}: ${size} bytes; a plan file is at most ${MAX_PLAN_BYTES} bytes (1 MiB): is it the right file?`,
    );
  const plan = parsePlan(readUtf8File(path), path);
  const { cells, notes } = expandPlan(plan);
  return { plan, cells, notes, warnings: plan.warnings };
}
