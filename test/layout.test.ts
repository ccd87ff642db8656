/**
 * The shape of the code (docs/development.md): dependencies run one way, down. Each room (a folder of src/) has a
 * level; a module imports only from its own room or from rooms below it, so no two rooms import each other and
 * nothing loops. The public entry (src/index.ts) may re-export any room. Tests are not counted.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers/data.js';

/** Higher imports lower. The shared modules at src/'s top (errors, log, version, text tables) are the floor. */
const LEVEL: Record<string, number> = {
  '(root)': 0,
  tasks: 1,
  metrics: 2,
  data: 3,
  ml: 3,
  scoring: 4,
  browser: 4,
  encoders: 5,
  llm: 5,
  report: 5,
  submit: 5,
  baselines: 6,
  engine: 7,
  plans: 8,
  workers: 9,
  server: 10,
  cli: 11,
};
const ENTRIES = new Set(['index.ts']);
const SRC = join(REPO_ROOT, 'src');

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)],
  );
}
const roomOf = (file: string) => {
  const parts = relative(SRC, file).split(sep);
  return parts.length > 1 ? (parts[0] as string) : '(root)';
};

/** Every relative import (static, re-export or dynamic) between two rooms, as "from → to (file)". */
function crossings(): { from: string; to: string; file: string }[] {
  const out: { from: string; to: string; file: string }[] = [];
  for (const file of walk(SRC)) {
    if (!/\.tsx?$/.test(file) || /\.test\.tsx?$/.test(file) || ENTRIES.has(relative(SRC, file))) continue;
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:from\s+|import\(\s*)['"](\.{1,2}\/[^'"]+)['"]/g)) {
      const target = resolve(dirname(file), m[1] as string);
      const from = roomOf(file);
      const to = roomOf(target);
      if (from !== to) out.push({ from, to, file: relative(REPO_ROOT, file) });
    }
  }
  return out;
}

describe('the layout of src/', () => {
  it('has a level for every room', () => {
    const rooms = [...new Set(walk(SRC).map(roomOf))].sort();
    expect(rooms.filter((r) => LEVEL[r] === undefined)).toEqual([]);
  });

  it('imports only downwards: no room imports a higher one, so none import each other', () => {
    const up = crossings()
      .filter((c) => (LEVEL[c.to] as number) >= (LEVEL[c.from] as number))
      .map((c) => `${c.file}: ${c.from} → ${c.to}`);
    expect(up).toEqual([]);
  });

  it('keeps plans, workers and the server off the CLI, and the LLM harness off the report', () => {
    const bad = crossings().filter(
      (c) =>
        (['plans', 'workers', 'server', 'engine'].includes(c.from) && c.to === 'cli') ||
        (c.from === 'llm' && c.to === 'report'),
    );
    expect(bad).toEqual([]);
  });
});
