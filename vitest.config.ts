import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Own tiers: test/docker (npm run test:docker, needs Docker), test/browser (npm run test:browser, needs Chromium),
    // test/package (npm run test:package, builds the release artifacts first).
    exclude: ['test/docker/**', 'test/browser/**', 'test/package/**', 'node_modules/**'],
    // Every connection a test process opens must stay on loopback (throws otherwise, naming the address).
    setupFiles: ['test/support/loopback-guard.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: keep parallelism modest so process-heavy tests do not starve each other.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
