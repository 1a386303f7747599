import { defineConfig } from 'vitest/config';

/**
 * The observability tier (`npm run test:observability`, run by .ci/run after the browser tier): the shipped
 * Prometheus alert rules (packaging/prometheus) with the real promtool, and a real Prometheus scraping a real
 * forwarder and loading those rules; the alertmanager sink against real Alertmanagers. Needs Debian's
 * `prometheus` package (promtool and prometheus on PATH) and `prometheus-alertmanager`; a missing tool fails the
 * tests, naming the package.
 */
export default defineConfig({
  test: {
    include: ['test/observability/**/*.test.ts'],
    setupFiles: ['test/support/loopback-guard.ts', 'test/support/log-audit-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    maxWorkers: 2,
    reporters: ['default'],
  },
});
