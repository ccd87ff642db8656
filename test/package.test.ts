/**
 * The npm package as users install it: `npm pack` lists the README and every file its relative links name (docs/
 * and its images), so that no README link breaks for someone who installed from the registry; and installing it runs
 * no script of its own (dist/ is built when the package is packed).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers/data.js';

describe('the npm package', () => {
  it('ships every file the README links to', () => {
    const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const packed = new Set((JSON.parse(out) as { files: { path: string }[] }[])[0]?.files.map((f) => f.path));
    const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
    const links = [...readme.matchAll(/\]\(((?!https?:|#)[^)#\s]+)(#[^)]*)?\)/g)].map((m) => m[1] as string);
    expect(links.length).toBeGreaterThan(5);
    expect(links.filter((l) => !packed.has(l.replace(/^\.\//, '')))).toEqual([]);
    expect(packed.has('README.md')).toBe(true);
    expect([...packed].some((f) => f.startsWith('docs/images/'))).toBe(true);
  });

  it('runs no script of its own when installed (npm 11 lists those for approval)', () => {
    const scripts = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: object })
      .scripts;
    // `prepare` counts too: npm runs it on installs from git and a folder, and lists it on any install.
    expect(Object.keys(scripts).filter((s) => /^(pre|post)?install$|^prepare$/.test(s))).toEqual([]);
    expect(Object.keys(scripts)).toContain('prepack');
  });
});
