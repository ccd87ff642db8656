import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // e2e tests spawn the built CLI; give them room on a shared 2-core machine.
    testTimeout: 60_000,
    // Hooks start browsers, servers and databases: under load (a busy 2-core machine) they took over 10 s.
    hookTimeout: 120_000,
    globalSetup: ['test/global-setup.ts'],
  },
});
