/**
 * The fleet consumer's start checks: what `fleet run` refuses before it uses the network, beyond the fleet config
 * schema (loadFleetConfig applies that for both: it also refuses a dashboard beyond loopback without
 * dashboard.auth). One function for both: `fleet run` calls it before it opens
 * anything, `fleet validate` after the schema, so a fleet file `validate` accepts starts (the network permitting):
 *
 * - the Azure Storage packages the checkpoint store needs (an npm install without its optional peers);
 * - a SQLite history file that this build cannot open: not a file, not a SQLite database, written before schema
 *   migrations (`fleet migrate` copies it), or by a newer version.
 *
 * Not checked (they need the network or depend on who asks): Event Hubs, Blob Storage and PostgreSQL
 * credentials and reachability, whether this user may write the history file.
 */
import { DatabaseSync } from 'node:sqlite';
import { ConfigError, errorMessage } from '../errors.ts';
import type { FleetConfig } from './config.ts';
import { isPostgresUrl, LegacyHistoryError, SCHEMA_VERSION, SchemaTooNewError } from './history/index.ts';
import { storagePackagesProblem } from './storage-packages.ts';

const { existsSync, statSync } = process.getBuiltinModule('node:fs');

/** Every start problem of `config` here and now, one line each, key path first. */
export async function fleetStartProblems(config: FleetConfig): Promise<string[]> {
  const problems: string[] = [];
  const packages = await storagePackagesProblem();
  if (packages !== undefined) problems.push(`checkpoints: ${packages}`);
  if (!isPostgresUrl(config.database)) {
    const history = sqliteHistoryProblem(config.database);
    if (history !== undefined) problems.push(`database: ${history}`);
  }
  return problems;
}

/** Throws the ConfigError (exit code 2) naming every start problem, if there is one. */
export async function assertFleetStartable(config: FleetConfig, origin: string): Promise<void> {
  const problems = await fleetStartProblems(config);
  if (problems.length > 0) {
    throw new ConfigError(`the fleet consumer cannot start with this configuration (${origin}):`, problems);
  }
}

/** Why `fleet run` could not open the SQLite history at `path` (a new file is fine: it is created). */
function sqliteHistoryProblem(path: string): string | undefined {
  if (!existsSync(path)) return undefined;
  if (!statSync(path).isFile()) return `${path} exists but is not a file`;
  let db: DatabaseSync | undefined;
  try {
    db = new DatabaseSync(path, { readOnly: true });
    const tables = new Set(
      db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .all()
        .map((row) => String(row.name)),
    );
    if (!tables.has('schema_migrations')) {
      return tables.has('events') ? `${path}: ${new LegacyHistoryError().message}` : undefined;
    }
    const row = db.prepare('SELECT max(version) AS v FROM schema_migrations').get();
    const version = Number(row?.v ?? 0);
    return version > SCHEMA_VERSION ? `${path}: ${new SchemaTooNewError(version).message}` : undefined;
  } catch (error) {
    const message = errorMessage(error);
    // Not a database at all is a refusal; anything else (e.g. this user may not read it) is for the start to say.
    return /file is not a database/i.test(message)
      ? `${path} is not a SQLite database (${message})`
      : undefined;
  } finally {
    db?.close();
  }
}
