/**
 * Vitest globalSetup: one PostgreSQL server per `vitest run` (test/support/postgres.ts, or PG_TEST_URL's), its
 * admin URL handed to tests as `inject('pgAdminUrl')`; each test makes its own database with createTestDatabase.
 */
import type { TestProject } from 'vitest/node';
import { startPostgresServer } from './postgres.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Superuser URL of the run's PostgreSQL server (127.0.0.1), password included. */
    pgAdminUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await startPostgresServer();
  project.provide('pgAdminUrl', server.adminUrl);
  return () => server.stop();
}
