/**
 * Partition routing for the Event Hubs test double. Uses the SDK's own key → partition mapper (Jenkins
 * lookup3, the same function EventHubBufferedProducerClient uses) so the double routes keys exactly as the
 * SDK expects. The module is internal to the package, so it is loaded by file path next to the package entry.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const entry = require.resolve('@azure/event-hubs');
const mapper = require(join(dirname(entry), 'impl', 'partitionKeyToIdMapper.js')) as {
  mapPartitionKeyToId(partitionKey: string, partitionCount: number): number;
};

/** The partition index (0-based) a partition key maps to, as the SDK computes it. */
export function partitionForKey(partitionKey: string, partitionCount: number): number {
  return mapper.mapPartitionKeyToId(partitionKey, partitionCount);
}
