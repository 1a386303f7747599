import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Own tiers: test/docker (npm run test:docker, needs Docker), test/browser (npm run test:browser, needs Chromium),
    // test/observability (npm run test:observability, needs Debian's prometheus package),
    // test/kubernetes (npm run test:kubernetes, needs Debian's kubernetes-client package: kubectl),
    // test/package (npm run test:package, builds the release artifacts first).
    exclude: [
      'test/docker/**',
      'test/browser/**',
      'test/observability/**',
      'test/kubernetes/**',
      'test/package/**',
      'node_modules/**',
    ],
    // Every connection a test process opens must stay on loopback (throws otherwise, naming the address).
    // Every JSON log line a test writes is parsed strictly: a key written twice fails the test (log-audit-setup).
    setupFiles: ['test/support/loopback-guard.ts', 'test/support/log-audit-setup.ts'],
    // First: the run's own temporary directory (TMPDIR); anything a test leaves there fails the run, naming it.
    // Then one real PostgreSQL server per run (127.0.0.1, binaries from npm) for the PostgreSQL fleet store's
    // tests: inject('pgAdminUrl'); PG_TEST_URL uses an existing server instead.
    globalSetup: ['test/support/tmp-litter-global-setup.ts', 'test/support/postgres-global-setup.ts'],
    // @grpc/grpc-js sends the target host as TLS SNI even when it is an IP address, and Node warns about that
    // once per process (DEP0123). Tests connect to 127.0.0.1 by rule, so the OTLP gRPC-over-TLS tests trigger
    // it; it says nothing about our code (docs/observability.md, "OTLP over gRPC with TLS to an IP address").
    execArgv: ['--disable-warning=DEP0123'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: keep parallelism modest so process-heavy tests do not starve each other.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
