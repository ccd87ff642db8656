/**
 * Plans on their own (no CLI): a plan file checked with positions, expanded into cells that each carry a run spec,
 * and run side by side by a caller's `runCell`, resumable, refusing a folder whose cells changed or that an older
 * release started.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeRunSpec, RUN_SPEC_SCHEMA } from '../engine/spec.js';
import type { PlanError } from '../errors.js';
import { silentLogger } from '../log.js';
import { expandPlan } from './cells.js';
import { parsePlan } from './file.js';
import { runPlan } from './run.js';

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
        '  - {name: a, provider: openai, base_url: "http://127.0.0.1:1/v1", model: m, max_wait: 9}',
        '  - {name: b, provider: llama, model: ./m.gguf, shots: 1, data: d}',
        'matrix: {shots: [0, 2]}',
      ].join('\n'),
    );
    const plan = parsePlan(readFileSync(file, 'utf8'), file);
    const { cells, notes } = expandPlan(plan);
    expect(cells.map((c) => [c.id, c.spec.kind === 'llm' ? c.spec.shots : null])).toEqual([
      ['a/shots=0', 0],
      ['a/shots=2', 2],
      ['b/default', 1],
    ]);
    // A cell's spec is the spec of its settings, the provider's fields nested; an old key is read as its field.
    expect(cells[0]?.spec).toEqual(
      makeRunSpec({
        schema: RUN_SPEC_SCHEMA,
        kind: 'llm',
        provider: { name: 'openai', model: 'm', base_url: 'http://127.0.0.1:1/v1', max_wait_s: 9 },
        tasks: ['RuMedDaNet', 'RuMedNLI'],
        split: 'test',
        shots: 0,
      }),
    );
    expect(plan.warnings).toEqual([
      `${file}:4:78: "max_wait" is an old name; write max_wait_s (the run spec's field): it is read as that for now`,
    ]);
    // A relative path is read from the plan's folder; another, as the command line reads it, from the current one.
    expect(cells[2]?.spec).toMatchObject({
      provider: { name: 'llama', model: join(file, '..', 'm.gguf') },
      data: resolve('d'),
    });
    expect(notes).toEqual(['b: sets "shots" itself; its cells do not vary by it']);
  });

  it('are refused with every problem at its line and column', () => {
    const file = planFile(
      ['name: p', 'models:', '  - {name: a, provider: openai, model: m, shots: -1}', 'colour: red'].join(
        '\n',
      ),
    );
    let problems: readonly string[] = [];
    try {
      parsePlan(readFileSync(file, 'utf8'), file);
    } catch (e) {
      problems = (e as PlanError).problems;
    }
    expect(problems).toEqual([
      `${file}:4:1: unknown key "colour"; a plan takes name, split, tasks, tasks_dir, data, defaults, models, matrix, max_in_flight, retry_rounds, retry_delay_s`,
      `${file}:3:50: shots: Too small: expected number to be >=0`,
    ]);
  });

  it("refuse a cell that breaks a rule between the spec's fields, at its model's line", () => {
    const file = planFile(
      [
        'name: p',
        'tasks: [RuMedDaNet]',
        'models:',
        '  - {name: c, provider: anthropic, model: claude, max_cost: 5}',
        '  - {name: q, provider: openai, base_url: "http://x/v1", model: m, price_prompt: 1, price_completion: 2}',
      ].join('\n'),
    );
    const plan = parsePlan(readFileSync(file, 'utf8'), file);
    let problems: readonly string[] = [];
    try {
      expandPlan(plan);
    } catch (e) {
      problems = (e as PlanError).problems;
    }
    expect(problems).toEqual([`${file}:4:5: c/default: max_cost: needs prices (USD per million tokens)`]);
    expect(plan.models[1]?.settings).toEqual({
      model: 'm',
      base_url: 'http://x/v1',
      'prices.prompt': 1,
      'prices.completion': 2,
    });
    expect(plan.warnings.map((w) => w.slice(file.length))).toEqual([
      `:5:68: "price_prompt" is an old name; write prices: {prompt: …} (the run spec's field): it is read as that for now`,
      `:5:85: "price_completion" is an old name; write prices: {completion: …} (the run spec's field): it is read as that for now`,
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
    const plan = parsePlan(readFileSync(file, 'utf8'), file);
    const { cells } = expandPlan(plan);
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
    const first = await runPlan({ plan, cells, outDir: out, cellsAtOnce: 2, runCell, log: silentLogger });
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
