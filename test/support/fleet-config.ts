/** The fleet consumer's config file of the fleet tests (the Event Hubs double and Azurite via env secrets). */
import { writeFileSync } from 'node:fs';

/**
 * Writes a fleet config to `file`: consumer group `group`, history in `database`, the Event Hubs connection
 * string from $SEF_FLEET_EH and the checkpoint store's from $SEF_FLEET_BLOB, fast load balancing, dashboard on
 * any free port. Returns `file`.
 */
export function writeFleetConfig(file: string, options: { group: string; database: string }): string {
  writeFileSync(
    file,
    [
      'eventHubs:',
      '  connectionString: { env: SEF_FLEET_EH }',
      `  consumerGroup: ${options.group}`,
      '  maxWaitTimeMs: 200',
      '  loadBalancing: { updateIntervalMs: 500, ownershipExpirationMs: 3000 }',
      'checkpoints:',
      '  connectionString: { env: SEF_FLEET_BLOB }',
      '  containerName: fleet-checkpoints',
      `database: ${JSON.stringify(options.database)}`,
      'dashboard: { port: 0 }',
      'log: { level: warn }',
      '',
    ].join('\n'),
  );
  return file;
}
