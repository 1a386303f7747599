/**
 * Opens the fleet history a fleet config names: a SQLite file, or PostgreSQL with a password (in the URL or
 * `postgres.password`, a secret) or Microsoft Entra tokens (`postgres.authentication: entra`).
 */
import type { FleetConfig } from './config.ts';
import { type FleetHistory, type HistoryTarget, isPostgresUrl, openHistory } from './history/index.ts';

/** Where the config's history is and how to reach it. */
export async function historyTarget(
  config: Pick<FleetConfig, 'database' | 'postgres'>,
  options: { readOnly?: boolean } = {},
): Promise<HistoryTarget> {
  const target: HistoryTarget = { database: config.database, readOnly: options.readOnly };
  if (!isPostgresUrl(config.database)) return target;
  const pg = config.postgres;
  target.poolSize = pg.poolSize;
  if (pg.password !== undefined) {
    const password = pg.password;
    target.password = () => password.reveal();
  }
  if (pg.authentication === 'entra') {
    const [{ createCredential }, { entraTokenSource }] = await Promise.all([
      import('../azure/credentials.ts'),
      import('./history/postgres-database.ts'),
    ]);
    target.entra = entraTokenSource(createCredential(pg.credential));
  }
  return target;
}

/** Opens (and migrates, unless read-only) the history of `config`. */
export async function openConfiguredHistory(
  config: Pick<FleetConfig, 'database' | 'postgres'>,
  options: { readOnly?: boolean } = {},
): Promise<FleetHistory> {
  return openHistory(await historyTarget(config, options));
}
