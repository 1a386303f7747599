import { defineConfig } from 'vitest/config';

/**
 * Browser tier (`npm run test:browser`): tests that drive Debian's headless Chromium (/usr/bin/chromium) with
 * playwright-core. Not part of `npm test`, because a fresh machine has no Chromium; CI installs it first (.ci/run).
 */
export default defineConfig({
  test: {
    include: ['test/browser/**/*.test.ts'],
    setupFiles: ['test/support/loopback-guard.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    maxWorkers: 2,
    reporters: ['default'],
  },
});
