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
  wasm: 1,
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

/** The modules of src/ (tests and the public entry aside). */
const modules = () =>
  walk(SRC).filter((f) => /\.tsx?$/.test(f) && !/\.test\.tsx?$/.test(f) && !ENTRIES.has(relative(SRC, f)));

/** What a module imports relatively (static, re-export or dynamic), as absolute paths. */
const importsOf = (file: string) =>
  [...readFileSync(file, 'utf8').matchAll(/(?:from\s+|import\(\s*)['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) =>
    resolve(dirname(file), m[1] as string),
  );

/** Every relative import between two rooms, as "from → to (file)". */
function crossings(): { from: string; to: string; file: string }[] {
  const out: { from: string; to: string; file: string }[] = [];
  for (const file of modules()) {
    for (const target of importsOf(file)) {
      const from = roomOf(file);
      const to = roomOf(target);
      if (from !== to) out.push({ from, to, file: relative(REPO_ROOT, file) });
    }
  }
  return out;
}

const SERVER = join(SRC, 'server');
/** A server module's concern: the folder under src/server/ it sits in ('' at src/server/'s top, or outside). */
const concernOf = (file: string) => {
  const parts = relative(SERVER, file).split(sep);
  return parts.length > 1 && parts[0] !== '..' ? (parts[0] as string) : '';
};
const isQueries = (file: string) => /^queries\.(js|ts)$/.test(file.split(sep).pop() as string);

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

  it("keeps a server concern's queries to that concern, and SQL to the query files and the database room", () => {
    const bad: string[] = [];
    for (const file of modules()) {
      const at = relative(REPO_ROOT, file);
      for (const target of importsOf(file)) {
        // boards/queries.ts is imported by boards/ alone; db/shared.ts by the server's modules alone (not the CLI).
        if (isQueries(target) && concernOf(target) !== concernOf(file))
          bad.push(`${at} imports ${relative(SRC, target)}`);
        if (concernOf(target) === 'db' && roomOf(file) !== 'server')
          bad.push(`${at} imports ${relative(SRC, target)}`);
      }
      const inServer = roomOf(file) === 'server' || roomOf(file) === 'cli';
      const sqlHere = concernOf(file) === 'db' || isQueries(file);
      if (
        inServer &&
        !sqlHere &&
        /\.(selectFrom|insertInto|updateTable|deleteFrom)\(|\bsql`/.test(readFileSync(file, 'utf8'))
      )
        bad.push(`${at} writes SQL`);
    }
    expect(bad).toEqual([]);
  });

  it('has no import circle, between rooms or inside one (type imports count: they tie the modules together too)', () => {
    // Tarjan's strongly connected components over the modules' relative imports; a component of two or more is a
    // circle, named by its modules.
    const ts = (p: string) => p.replace(/\.js$/, '.ts');
    const files = new Set(modules());
    const edges = new Map<string, string[]>();
    for (const f of files)
      edges.set(
        f,
        importsOf(f)
          .flatMap((t) => [ts(t), t.replace(/\.js$/, '.tsx')])
          .filter((t) => files.has(t)),
      );
    const index = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const on = new Set<string>();
    const circles: string[] = [];
    let next = 0;
    const visit = (v: string): void => {
      index.set(v, next);
      low.set(v, next++);
      stack.push(v);
      on.add(v);
      for (const w of edges.get(v) ?? []) {
        if (!index.has(w)) {
          visit(w);
          low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
        } else if (on.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
      }
      if (low.get(v) !== index.get(v)) return;
      const part: string[] = [];
      for (;;) {
        const w = stack.pop() as string;
        on.delete(w);
        part.push(relative(SRC, w));
        if (w === v) break;
      }
      if (part.length > 1) circles.push(part.sort().join(' ↔ '));
    };
    for (const f of files) if (!index.has(f)) visit(f);
    expect(circles.sort()).toEqual([]);
  });

  it("names a provider only in its own record: no module outside src/engine/providers/ switches on a provider's name or lists them", () => {
    // A comparison (===, !==, ==, !=), a switch's case, a list asked `includes`, a type union of a provider's name, or
    // a list of providers written out (a flag's choices, an enum; one item on a line of its own): each is a place a
    // new provider would have to be added to; the registry lists them. Tests name providers as data and are not read.
    const NAME = `'(?:openai|anthropic|llama)'`;
    const SWITCHES = new RegExp(
      [
        `[!=]==?\\s*${NAME}`,
        `${NAME}\\s*[!=]==?`,
        `case\\s+${NAME}`,
        `${NAME}\\s*\\|`,
        `\\|\\s*${NAME}`,
        `includes\\(\\s*${NAME}`,
        `${NAME}\\s*,\\s*${NAME}`,
        `^\\s*${NAME},?\\s*$`,
      ].join('|'),
    );
    const PROVIDERS = join(SRC, 'engine', 'providers');
    const bad = modules()
      .filter((f) => !f.startsWith(PROVIDERS + sep))
      .flatMap((f) =>
        readFileSync(f, 'utf8')
          .split('\n')
          .flatMap((line, i) =>
            SWITCHES.test(line) ? [`${relative(SRC, f)}:${i + 1}: ${line.trim()}`] : [],
          ),
      );
    expect(bad).toEqual([]);
  });

  it("keeps docs/development.md's count of test files true", () => {
    const count = ['src', 'test']
      .flatMap((d) => walk(join(REPO_ROOT, d)))
      .filter((f) => /\.test\.tsx?$/.test(f)).length;
    const said = /about \d+ tests in (\d+) files/.exec(
      readFileSync(join(REPO_ROOT, 'docs/development.md'), 'utf8'),
    );
    expect(Number(said?.[1])).toBe(count);
  });
});
