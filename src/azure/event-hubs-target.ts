/**
 * The Event Hubs target of a config section — a connection string or a namespace with a hub name — checked
 * without loading @azure/event-hubs. Shared by the Event Hubs sink's options (src/sinks/event-hubs/options.ts)
 * and the fleet consumer's `eventHubs` section (src/fleet/config.ts).
 */
import type { z } from 'zod';
import type { Secret } from '../secret.ts';
import { parseEventHubsConnectionString } from './event-hubs-connection-string.ts';

/**
 * Checks an Event Hubs target: exactly one of a connection string or a namespace, and a hub name from
 * eventHubName or the connection string's EntityPath (which must agree). Never echoes the secret.
 */
export function checkEventHubTarget(
  o: {
    connectionString?: Secret | undefined;
    fullyQualifiedNamespace?: string | undefined;
    eventHubName?: string | undefined;
  },
  ctx: z.RefinementCtx,
): void {
  if ((o.connectionString === undefined) === (o.fullyQualifiedNamespace === undefined)) {
    ctx.addIssue({
      code: 'custom',
      message: 'give exactly one of connectionString or fullyQualifiedNamespace (+ eventHubName)',
    });
    return;
  }
  if (o.fullyQualifiedNamespace !== undefined && o.eventHubName === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['eventHubName'],
      message: 'eventHubName is required with fullyQualifiedNamespace',
    });
  }
  // A secret missing here (config validate --allow-missing-secrets) cannot be checked beyond its form.
  if (o.connectionString !== undefined && o.connectionString.missing === undefined) {
    let entityPath: string | undefined;
    try {
      entityPath = parseEventHubsConnectionString(o.connectionString.reveal()).eventHubName;
    } catch {
      // never echo the parser's message: it may quote the secret
      ctx.addIssue({
        code: 'custom',
        path: ['connectionString'],
        message: `connection string from ${o.connectionString.origin} is not a valid Event Hubs connection string (needs Endpoint and SharedAccessKeyName+SharedAccessKey or SharedAccessSignature)`,
      });
      return;
    }
    if (entityPath === undefined && o.eventHubName === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['eventHubName'],
        message: 'eventHubName is required when the connection string has no EntityPath',
      });
    }
    if (entityPath !== undefined && o.eventHubName !== undefined && entityPath !== o.eventHubName) {
      ctx.addIssue({
        code: 'custom',
        path: ['eventHubName'],
        message: `eventHubName ${o.eventHubName} differs from the connection string's EntityPath ${entityPath}`,
      });
    }
  }
}
