/**
 * A benchmark that cannot run says what is missing and which variable points elsewhere (issue #63: serve-board said
 * "data not found" when upstream's predictions were what was missing).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers/data.js';

describe('bench/serve-board', () => {
  it('names the missing predictions and RUMEDBENCH_REFERENCE, not the data it has', () => {
    const data = mkdtempSync(join(tmpdir(), 'rumedbench-bench-data-'));
    const nowhere = join(data, 'no-such-folder');
    const r = spawnSync(process.execPath, [join(REPO_ROOT, 'bench', 'serve-board.bench.js')], {
      encoding: 'utf8',
      env: { ...process.env, RUMEDBENCH_DATA: data, RUMEDBENCH_REFERENCE: nowhere },
    });
    expect([r.status, r.stdout.trim()]).toEqual([
      0,
      `skipped: not found: upstream's Feature-based predictions (${join(nowhere, 'linear_models')}; set RUMEDBENCH_REFERENCE to the folder holding linear_models/)`,
    ]);
  });
});
