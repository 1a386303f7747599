import { defineConfig } from 'vitest/config';

/**
 * The release tier (`npm run test:package`, run by .ci/run after `npm test`): tests of the real artifacts that
 * `npm run package` writes into release/ — the executables (linux-x64 natively with no Node.js on PATH,
 * linux-arm64 under qemu-user), the archives, the Debian packages (dpkg, lintian).
 */
export default defineConfig({
  test: {
    include: ['test/package/**/*.test.ts'],
    setupFiles: ['test/support/loopback-guard.ts', 'test/support/log-audit-setup.ts'],
    testTimeout: 180_000,
    hookTimeout: 180_000,
    // Executables under qemu and lintian are CPU-heavy: one file at a time on two cores.
    maxWorkers: 1,
    fileParallelism: false,
    reporters: ['default'],
  },
});
