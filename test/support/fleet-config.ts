/** The fleet consumer's config file of the fleet tests (the Event Hubs double and Azurite via env secrets). */
import { writeFileSync } from 'node:fs';

export interface FleetConfigOptions {
  group: string;
  /** A SQLite path or postgres:// URL written into the file, or `{ env: NAME }`: resolved from $NAME (a secret). */
  database: string | { env: string };
  /** Load-balancing loop interval (default 500 ms). */
  updateIntervalMs?: number;
  /** How long a dead consumer's partitions stay owned (default 3000 ms). */
  ownershipExpirationMs?: number;
  /** More top-level YAML lines (e.g. `coverage: { silentMargin: 2s }`). */
  extra?: string[];
}

/**
 * Writes a fleet config to `file`: consumer group `group`, history in `database`, the Event Hubs connection
 * string from $SEF_FLEET_EH and the checkpoint store's from $SEF_FLEET_BLOB, fast load balancing, dashboard on
 * any free port. Returns `file`.
 */
export function writeFleetConfig(file: string, options: FleetConfigOptions): string {
  const database =
    typeof options.database === 'string'
      ? JSON.stringify(options.database)
      : `{ env: ${options.database.env} }`;
  writeFileSync(
    file,
    [
      'eventHubs:',
      '  connectionString: { env: SEF_FLEET_EH }',
      `  consumerGroup: ${options.group}`,
      '  maxWaitTimeMs: 200',
      `  loadBalancing: { updateIntervalMs: ${options.updateIntervalMs ?? 500}, ownershipExpirationMs: ${options.ownershipExpirationMs ?? 3000} }`,
      'checkpoints:',
      '  connectionString: { env: SEF_FLEET_BLOB }',
      '  containerName: fleet-checkpoints',
      `database: ${database}`,
      'dashboard: { port: 0 }',
      'log: { level: warn }',
      ...(options.extra ?? []),
      '',
    ].join('\n'),
  );
  return file;
}
