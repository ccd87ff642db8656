import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { defineConfig } from 'vitest/config';
import { watPlugin } from './scripts/wat.js';
import { unitTestsNeedingBuild } from './test/needs-build.js';

const root = dirname(fileURLToPath(import.meta.url));
const built = unitTestsNeedingBuild(root);

export default defineConfig({
  // A module's `./NAME.wat.js` (a WebAssembly kernel) assembled from NAME.wat in memory: no build needed.
  plugins: [watPlugin()],
  test: {
    // Worker threads that a test starts from src/ (the scorer's, the one-vs-rest trainer's) load TypeScript and .wat
    // through Node.js's module hooks, which a thread inherits from its test process: no build needed.
    execArgv: ['--import', pathToFileURL(join(root, 'test/source-register.js')).href],
    // e2e tests spawn the built CLI; give them room on a shared 2-core machine.
    testTimeout: 60_000,
    // Hooks start browsers, servers and databases: under load (a busy 2-core machine) they took over 10 s.
    hookTimeout: 120_000,
    // Two projects, so that a unit test file runs in seconds: only the tests that run dist/ (the CLI, a worker
    // thread's script) wait for the build, which is skipped when dist/ is current (scripts/build-stamp.js).
    projects: [
      { extends: true, test: { name: 'unit', include: ['src/**/*.test.ts'], exclude: built } },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/**/*.test.ts', ...built],
          globalSetup: ['test/global-setup.ts'],
        },
      },
    ],
  },
});
