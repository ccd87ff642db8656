/**
 * The library's declarations compile in a user's strict project without `skipLibCheck`, with the DOM library beside
 * Node's types (where fetch's RequestInit has no `dispatcher`): a project that imports rumedbench type-checks as is.
 * (Before #63: `dist/data/public-address.d.ts(69,43): TS2339 'dispatcher' does not exist on type 'RequestInit'`.)
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/data.js';

const BUILT = existsSync(join(REPO_ROOT, 'dist', 'index.d.ts'));

describe.skipIf(!BUILT)(
  `the declarations (${BUILT ? 'built' : 'dist/ not built: run npm run build'})`,
  () => {
    // With the DOM library: vega's own typings (a dependency's) name DOM types, so a project without it needs
    // skipLibCheck for them whatever our declarations say; ours are checked where theirs compile.
    it('compile under strict tsc without skipLibCheck, with the DOM library', () => {
      const errors: Record<string, string> = {};
      for (const lib of [['es2023', 'dom']]) {
        const dir = mkdtempSync(join(tmpdir(), 'rumedbench-consumer-'));
        mkdirSync(join(dir, 'node_modules'));
        symlinkSync(REPO_ROOT, join(dir, 'node_modules', 'rumedbench'), 'dir');
        symlinkSync(join(REPO_ROOT, 'node_modules', '@types'), join(dir, 'node_modules', '@types'), 'dir');
        writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
        writeFileSync(join(dir, 'use.ts'), "import * as r from 'rumedbench';\nexport const x = r;\n");
        writeFileSync(
          join(dir, 'tsconfig.json'),
          JSON.stringify({
            compilerOptions: {
              strict: true,
              skipLibCheck: false,
              noEmit: true,
              module: 'nodenext',
              moduleResolution: 'nodenext',
              target: 'es2022',
              lib,
              types: ['node'],
            },
            files: ['use.ts'],
          }),
        );
        const tsc = join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
        const r = spawnSync(process.execPath, [tsc, '-p', dir], { encoding: 'utf8' });
        errors[lib.join('+')] = `${r.stdout}${r.stderr}`.replaceAll(REPO_ROOT, '<repo>');
      }
      expect(errors).toEqual({ 'es2023+dom': '' });
    }, 240_000);
  },
);
