import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // e2e tests spawn the built CLI; give them room on a shared 2-core machine.
    testTimeout: 60_000,
    globalSetup: ['test/global-setup.ts'],
  },
});
