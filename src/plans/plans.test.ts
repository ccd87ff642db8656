/**
 * Plans on their own (no CLI): a plan file checked with positions, expanded into cells that each carry a run spec,
 * and run side by side by a caller's `runCell`, resumable, refusing a folder whose cells changed or that an older
 * release started.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeRunSpec, RUN_SPEC_SCHEMA } from '../engine/spec.js';
import type { PlanError } from '../errors.js';
import { silentLogger } from '../log.js';
import { expandPlan } from './cells.js';
import { type PlanProvider, parsePlan } from './file.js';
import { runPlan } from './run.js';

const whole = (v: unknown) => {
  if (!Number.isInteger(v) || (v as number) < 0)
    throw new Error(`a whole number ≥ 0, got ${JSON.stringify(v)}`);
};
const text = (v: unknown) => {
  if (typeof v !== 'string') throw new Error(`a text, got ${JSON.stringify(v)}`);
};
/** A provider as the CLI would declare one, reduced to three settings. */
const PROVIDERS: Record<string, PlanProvider> = {
  openai: {
    settings: new Map([
      ['model', { check: text }],
      ['base_url', { check: text }],
      ['shots', { check: whole }],
      ['tasks', { check: text }],
      ['split', { check: text }],
      ['template', { check: text }],
    ]),
    toSpec: (s) =>
      makeRunSpec({
        schema: RUN_SPEC_SCHEMA,
        kind: 'llm',
        provider: { name: 'openai', model: s.model, base_url: s.base_url },
        tasks: String(s.tasks).split(','),
        split: s.split,
        ...(s.shots !== undefined ? { shots: s.shots } : {}),
        ...(s.template !== undefined ? { system: s.template } : {}),
      }),
    endpoint: (s) => `openai ${String(s.base_url)}`,
    inFlight: () => 8,
    paths: ['template'],
  },
};

const planFile = (text: string) => {
  const dir = mkdtempSync(join(tmpdir(), 'rumedbench-plans-'));
  const file = join(dir, 'plan.yaml');
  writeFileSync(file, text);
  return file;
};

describe('plans', () => {
  it('expand into cells that each carry the run spec of their settings', () => {
    const file = planFile(
      [
        'name: p',
        'tasks: [RuMedDaNet, RuMedNLI]',
        'models:',
        '  - {name: a, provider: openai, base_url: "http://127.0.0.1:1/v1", model: m, template: ./sys.txt}',
        'matrix: {shots: [0, 2]}',
      ].join('\n'),
    );
    const plan = parsePlan(readFileSync(file, 'utf8'), file, PROVIDERS);
    const { cells, notes } = expandPlan(plan, PROVIDERS);
    expect(cells.map((c) => [c.id, c.spec.kind === 'llm' ? c.spec.shots : null])).toEqual([
      ['a/shots=0', 0],
      ['a/shots=2', 2],
    ]);
    expect(cells[0]?.spec).toMatchObject({
      provider: { name: 'openai', model: 'm', base_url: 'http://127.0.0.1:1/v1' },
      tasks: ['RuMedDaNet', 'RuMedNLI'],
      split: 'test',
      // A relative path is read from the plan's folder.
      system: join(file, '..', 'sys.txt'),
    });
    expect(notes).toEqual([]);
  });

  it('are refused with every problem at its line and column', () => {
    const file = planFile(
      ['name: p', 'models:', '  - {name: a, provider: openai, model: m, shots: -1}', 'colour: red'].join(
        '\n',
      ),
    );
    let problems: readonly string[] = [];
    try {
      parsePlan(readFileSync(file, 'utf8'), file, PROVIDERS);
    } catch (e) {
      problems = (e as PlanError).problems;
    }
    expect(problems).toEqual([
      `${file}:4:1: unknown key "colour"; a plan takes name, split, tasks, tasks_dir, data, defaults, models, matrix, max_in_flight, retry_rounds, retry_delay_s`,
      `${file}:3:50: shots: a whole number ≥ 0, got -1`,
    ]);
  });

  it('run side by side through the caller, resume, and refuse a folder whose cells changed or an older release began', async () => {
    const file = planFile(
      [
        'name: p',
        'tasks: [RuMedDaNet]',
        'models:',
        '  - {name: a, provider: openai, base_url: "http://x/v1", model: m}',
        'matrix: {shots: [0, 1, 2]}',
      ].join('\n'),
    );
    const plan = parsePlan(readFileSync(file, 'utf8'), file, PROVIDERS);
    const { cells } = expandPlan(plan, PROVIDERS);
    const out = mkdtempSync(join(tmpdir(), 'rumedbench-plan-out-'));
    const ran: string[] = [];
    let inFlight = 0;
    let peak = 0;
    const runCell = async (cell: (typeof cells)[number], at: { out: string; resume: boolean }) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await new Promise((r) => setTimeout(r, 20));
      inFlight--;
      ran.push(`${cell.id}${at.resume ? ' (resumed)' : ''}`);
      if (cell.id.endsWith('shots=1')) {
        mkdirSync(at.out, { recursive: true });
        writeFileSync(join(at.out, 'journal.jsonl'), '');
        return { code: 3, error: 'some requests failed' };
      }
      return { code: 0 };
    };
    const first = await runPlan({ plan, cells, outDir: out, jobs: 2, runCell, log: silentLogger });
    expect(first.cells.map((c) => [c.cell, c.status])).toEqual([
      ['a/shots=0', 'failed'],
      ['a/shots=1', 'failed'],
      ['a/shots=2', 'failed'],
    ]);
    expect(peak).toBe(2);
    // plan.json holds the cells' specs, not command lines.
    const state = JSON.parse(readFileSync(join(out, 'plan.json'), 'utf8')) as {
      cells: { id: string; spec: unknown }[];
    };
    expect(state.cells.map((c) => c.spec)).toEqual(cells.map((c) => c.spec));

    await expect(runPlan({ plan, cells, outDir: out, runCell, log: silentLogger })).rejects.toThrow(
      'already holds a plan run; --resume finishes it',
    );
    ran.length = 0;
    await runPlan({ plan, cells, outDir: out, resume: true, runCell, log: silentLogger });
    // Cells without a summary run again; the one with a journal continues it.
    expect(ran.sort()).toEqual(['a/shots=0', 'a/shots=1 (resumed)', 'a/shots=2']);

    const changed = cells.map((c) =>
      c.spec.kind === 'llm' ? { ...c, spec: { ...c.spec, max_tokens: 7 } } : c,
    );
    await expect(
      runPlan({ plan, cells: changed, outDir: out, resume: true, runCell, log: silentLogger }),
    ).rejects.toThrow("the plan's cells changed");
    writeFileSync(
      join(out, 'plan.json'),
      JSON.stringify({ cells: cells.map((c) => ({ id: c.id, argv: ['llm'] })) }),
    );
    await expect(
      runPlan({ plan, cells, outDir: out, resume: true, runCell, log: silentLogger }),
    ).rejects.toThrow('was started by an older rumedbench');
  });
});
