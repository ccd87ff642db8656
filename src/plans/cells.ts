/**
 * A plan's cells: each model × one value of each matrix axis its provider takes. A cell is a run spec,
 * `makeRunSpec({...defaults, ...model, ...combo})` with the provider's fields nested (`./settings.ts`), with its
 * own run folder,
 * `<out>/<model>/<axis=value,…>/`, so that a plan is nothing but many run folders, each what the command alone would
 * write.
 */
import { dirname, join, resolve } from 'node:path';
import type { RunSpec } from '../engine/spec.js';
import { PlanError, RumedbenchError, RunSpecError } from '../errors.js';
import type { Plan } from './plan.js';
import { type PlanProvider, planProviders } from './settings.js';

export interface Cell {
  /** `<model>/<axis=value,…>`, or `<model>/default` without axes. */
  id: string;
  model: string;
  provider: string;
  /** The axes' values of this cell, in the matrix's order. */
  axes: Record<string, unknown>;
  /** Every setting the cell runs with (defaults, the model's own, the axes'), those its provider takes. */
  settings: Record<string, unknown>;
  /** What the engine runs. */
  spec: RunSpec;
  endpoint: string;
  inFlight: number;
}

export interface Expansion {
  cells: Cell[];
  /** What was left out, and why: axes or defaults a provider does not take. */
  notes: string[];
}

/** Keeps folder names portable: the value as text, with anything but letters, digits and ".-_" replaced. */
const safe = (v: unknown) => String(v).replace(/[^\p{L}\p{N}._-]+/gu, '_');

export function expandPlan(
  plan: Plan,
  providers: Readonly<Record<string, PlanProvider>> = planProviders(),
): Expansion {
  const cells: Cell[] = [];
  const notes: string[] = [];
  const problems: string[] = [];
  for (const m of plan.models) {
    const spec = providers[m.provider] as PlanProvider;
    const axes = plan.matrix.filter(([k]) => spec.settings.has(k) && !(k in m.settings));
    for (const [k] of plan.matrix) {
      if (!spec.settings.has(k))
        notes.push(`${m.name}: "${k}" is not a ${m.provider} setting; its cells do not vary by it`);
      else if (k in m.settings) notes.push(`${m.name}: sets "${k}" itself; its cells do not vary by it`);
    }
    const unused = Object.keys(plan.defaults).filter((k) => !spec.settings.has(k));
    if (unused.length > 0) notes.push(`${m.name}: defaults not taken by ${m.provider}: ${unused.join(', ')}`);
    const base: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(plan.defaults)) if (spec.settings.has(k)) base[k] = v;
    Object.assign(base, m.settings);
    if (spec.settings.has('tasks') && !('tasks' in base)) base.tasks = plan.tasks;
    if (spec.settings.has('split') && !('split' in base)) base.split = plan.split;
    if (spec.settings.has('data') && !('data' in base) && plan.data !== undefined) base.data = plan.data;
    for (const combo of product(axes)) {
      const settings = { ...base, ...combo };
      for (const k of spec.paths) {
        const v = settings[k];
        if (typeof v === 'string' && /^\.\.?(\/|$)/.test(v)) settings[k] = resolve(dirname(plan.file), v);
      }
      const label = Object.entries(combo)
        .map(([k, v]) => `${k}=${safe(v)}`)
        .join(',');
      const id = join(m.name, label || 'default');
      let made: RunSpec;
      try {
        made = spec.toSpec(settings);
      } catch (e) {
        // What no single setting says (a budget without prices, loglik on Anthropic): named at the model's entry.
        if (e instanceof RunSpecError) problems.push(...e.problems.map((p) => `${m.where}: ${id}: ${p}`));
        else if (e instanceof RumedbenchError) problems.push(`${m.where}: ${id}: ${e.message}`);
        else throw e;
        continue;
      }
      cells.push({
        id,
        model: m.name,
        provider: m.provider,
        axes: combo,
        settings,
        spec: made,
        endpoint: spec.endpoint(made),
        inFlight: spec.inFlight(made),
      });
    }
  }
  if (problems.length > 0) throw new PlanError(plan.file, problems);
  return { cells, notes };
}

function product(axes: readonly [string, unknown[]][]): Record<string, unknown>[] {
  let out: Record<string, unknown>[] = [{}];
  for (const [k, values] of axes) out = out.flatMap((o) => values.map((v) => ({ ...o, [k]: v })));
  return out;
}
