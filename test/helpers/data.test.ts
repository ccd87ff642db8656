/** Where the tests look for upstream's prediction files: a clone outside this workspace can say where its are. */
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { locateMaterial } from './data.js';

describe('locateMaterial', () => {
  const root = mkdtempSync(join(tmpdir(), 'rumedbench-material-'));
  const noShared = join(root, 'no-shared');
  const folder = (...parts: string[]) => {
    const p = join(root, ...parts);
    mkdirSync(p, { recursive: true });
    return p;
  };
  const locate = (env: Record<string, string | undefined>, dataDir: string | undefined) =>
    locateMaterial('reference-predictions', 'RUMEDBENCH_REFERENCE', env, dataDir, noShared);

  it('finds reference-predictions/ beside the data folder, or inside it, with only RUMEDBENCH_DATA set', () => {
    const beside = folder('a', 'data');
    const sibling = folder('a', 'reference-predictions');
    const within = folder('b', 'data');
    const inside = folder('b', 'data', 'reference-predictions');
    expect([locate({}, beside), locate({}, within), locate({}, folder('c', 'data'))]).toEqual([
      sibling,
      inside,
      undefined,
    ]);
  });

  it('takes RUMEDBENCH_REFERENCE first, and refuses one that names no folder instead of skipping quietly', () => {
    const own = folder('mine');
    expect(locate({ RUMEDBENCH_REFERENCE: own }, folder('b', 'data'))).toBe(own);
    expect(() => locate({ RUMEDBENCH_REFERENCE: join(root, 'nowhere') }, undefined)).toThrow(
      `RUMEDBENCH_REFERENCE=${join(root, 'nowhere')}: no such folder (it should hold reference-predictions/'s files)`,
    );
  });

  it('falls back to ../shared/rumedbench beside the repository', () => {
    const shared = folder('shared');
    const there = folder('shared', 'reference-predictions');
    expect(locateMaterial('reference-predictions', 'RUMEDBENCH_REFERENCE', {}, undefined, shared)).toBe(
      there,
    );
  });
});
