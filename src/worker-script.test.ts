import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { workerScript } from './worker-script.js';

// A package of its own: src/room/{starter.ts,thread.ts} and a build of them in dist/room/.
const root = mkdtempSync(join(tmpdir(), 'worker-script-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
for (const file of [
  'src/room/starter.ts',
  'src/room/thread.ts',
  'dist/room/starter.js',
  'dist/room/thread.js',
]) {
  mkdirSync(join(root, file, '..'), { recursive: true });
  writeFileSync(join(root, file), '');
}
const at = (file: string) => pathToFileURL(join(root, file)).href;

describe("a worker thread's script", () => {
  it('is, from the sources, the .ts beside the module: a build in dist/, stale or not, never stands in', () => {
    expect(workerScript('thread.js', at('src/room/starter.ts')).href).toBe(at('src/room/thread.ts'));
  });

  it('is, from the build, the .js beside the module', () => {
    expect(workerScript('thread.js', at('dist/room/starter.js')).href).toBe(at('dist/room/thread.js'));
  });

  it('is an error naming the path when neither is there', () => {
    expect(() => workerScript('missing.js', at('src/room/starter.ts'))).toThrow(
      `worker script not found at ${join(root, 'src/room/missing.js')}; run \`npm run build\` first`,
    );
  });
});
