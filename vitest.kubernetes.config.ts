import { defineConfig } from 'vitest/config';

/**
 * The kubernetes tier (`npm run test:kubernetes`, run by .ci/run): the Kubernetes API test double
 * (test/support/kubernetes-double) proven against a real client, Debian's kubectl. Needs Debian's
 * `kubernetes-client` package (kubectl on PATH; KUBECTL=/path names another binary); a missing kubectl fails the
 * tests, naming the package.
 */
export default defineConfig({
  test: {
    include: ['test/kubernetes/**/*.test.ts'],
    setupFiles: ['test/support/loopback-guard.ts', 'test/support/log-audit-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    maxWorkers: 2,
    reporters: ['default'],
  },
});
