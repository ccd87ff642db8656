// Loaded into each worker process by bench/workers.bench.js (`node --import`): counts the process's round trips to
// PostgreSQL (every query of a pg client, pg-boss's included: both use the same `pg`) and, at exit, prints one line
// with them and the process's own CPU time (all its threads, from getrusage): `bench-probe {"user_ms":…}`.
import { writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

// The `pg` the worker's build resolves, not this file's: a --before build in another checkout has its own.
const pg = createRequire(pathToFileURL(process.argv[1]))('pg');
let queries = 0;
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function counted(...args) {
  queries++;
  return query.apply(this, args);
};
process.on('exit', () => {
  const u = process.resourceUsage();
  writeSync(
    2,
    `bench-probe ${JSON.stringify({ user_ms: u.userCPUTime / 1000, system_ms: u.systemCPUTime / 1000, queries })}\n`,
  );
});
