import { describe, expect, it } from 'vitest';
import { TASKS } from './registry.js';
import type { TaskDefinition } from './types.js';

// Read through the general type, as every consumer does, so that optional fields can be asked for.
const DEFINITIONS: readonly TaskDefinition[] = TASKS;

describe('task definitions', () => {
  it('name each task once', () => {
    expect(new Set(TASKS.map((t) => t.name)).size).toBe(TASKS.length);
  });

  for (const task of DEFINITIONS) {
    if (task.kind !== 'classification') continue;
    it(`${task.name}: label names, keys and the naive label refer to its labels`, () => {
      const labels = new Set<string>(task.labels);
      expect(labels.has(task.naiveLabel)).toBe(true);
      for (const l of Object.keys(task.labelNames ?? {})) expect(labels.has(l)).toBe(true);
      const keys: Record<string, readonly string[]> = task.labelKeys ?? {};
      for (const l of Object.keys(keys)) expect(labels.has(l)).toBe(true);
      // A key must pick one label: numbers 1..n are taken by the labels' positions.
      const all = [...task.labels.map((_, i) => String(i + 1)), ...Object.values(keys).flat()];
      expect(new Set(all).size).toBe(all.length);
    });
  }
});

describe('near-miss task names', () => {
  it('suggests the task one or two edits away, in any case', async () => {
    const { didYouMean, nearestTask } = await import('./registry.js');
    expect(nearestTask('RuMedDanet')).toBe('RuMedDaNet');
    expect(nearestTask('rumednli')).toBe('RuMedNLI');
    expect(nearestTask('RuMedTst')).toBe('RuMedTest');
    expect(nearestTask('RuMedQA')).toBeUndefined();
    expect(didYouMean('RuMedNER2')).toBe('; did you mean RuMedNER?');
  });
});
