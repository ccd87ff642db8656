// Loaded into each worker process by bench/workers.bench.js (`node --import`): counts the process's round trips to
// PostgreSQL (every query of a pg client, pg-boss's included: both use the same `pg`) and, at exit, prints one line
// with them and the process's own CPU time (all its threads, from getrusage): `bench-probe {"user_ms":…}`. With
// RUMEDBENCH_BENCH_QUERIES=1 the line also counts the queries by their first words (which statements a job costs).
// The line also gives the process's life in phases (#64, fixed costs): milliseconds and CPU ms from its start to its
// first query (registration), to its first model request, from its last answer to its exit.
import { subscribe } from 'node:diagnostics_channel';
import { writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

/** Wall ms since the process started, and its CPU ms so far (user + system). */
const mark = () => {
  const c = process.cpuUsage();
  return { ms: performance.now(), cpu: (c.user + c.system) / 1000 };
};
const marks = {};
// The model requests, seen through undici's diagnostics channels (the transport's `request` and fetch alike).
subscribe('undici:request:create', () => {
  marks.firstRequest ??= mark();
});
subscribe('undici:request:trailers', () => {
  marks.lastAnswer = mark();
});

// The `pg` the worker's build resolves, not this file's: a --before build in another checkout has its own.
const pg = createRequire(pathToFileURL(process.argv[1]))('pg');
const byText = process.env.RUMEDBENCH_BENCH_QUERIES === '1' ? new Map() : undefined;
let queries = 0;
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function counted(...args) {
  queries++;
  marks.firstQuery ??= mark();
  if (byText) {
    const text = typeof args[0] === 'string' ? args[0] : String(args[0]?.text ?? '?');
    const kind = text.replace(/\s+/g, ' ').trim().slice(0, 90);
    byText.set(kind, (byText.get(kind) ?? 0) + 1);
  }
  return query.apply(this, args);
};
process.on('exit', () => {
  const u = process.resourceUsage();
  const end = mark();
  const phases = Object.fromEntries(
    Object.entries(marks).map(([k, m]) => [k, { ms: Math.round(m.ms), cpu: Math.round(m.cpu) }]),
  );
  phases.exit = { ms: Math.round(end.ms), cpu: Math.round(end.cpu) };
  writeSync(
    2,
    `bench-probe ${JSON.stringify({ user_ms: u.userCPUTime / 1000, system_ms: u.systemCPUTime / 1000, queries, phases, ...(byText ? { by: Object.fromEntries([...byText].sort((a, b) => b[1] - a[1])) } : {}) })}\n`,
  );
});
