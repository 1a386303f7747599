/**
 * Validation of an Event Hubs connection string without loading @azure/event-hubs (about 70 ms and 25 MB at
 * start-up), so that the config schema, `config validate` and the CLI stay light. Same rules as the SDK's
 * parseEventHubConnectionString (@azure/event-hubs 6, util/connectionStringUtils.js with core-amqp's
 * parseConnectionString); test/unit/azure/event-hubs-connection-string.test.ts checks both agree. Used by the
 * Event Hubs target check (event-hubs-target.ts), shared by the Event Hubs sink and the fleet consumer.
 */

/** The parts of a connection string the Event Hubs target check needs. */
export interface EventHubsConnectionStringParts {
  endpoint: string;
  /** EntityPath, when present. */
  eventHubName: string | undefined;
}

/**
 * Parses `Key=Value;...` and checks Endpoint and the SharedAccessKeyName+SharedAccessKey / SharedAccessSignature
 * pairing. Throws a generic Error (never quoting the input: it is a secret) when the string is not valid.
 */
export function parseEventHubsConnectionString(connectionString: string): EventHubsConnectionStringParts {
  const parts: Record<string, string> = {};
  for (const raw of connectionString.trim().split(';')) {
    const part = raw.trim();
    if (part === '') continue;
    const split = part.indexOf('=');
    if (split === -1) throw new Error('connection string malformed: a part has no "=" assignment');
    const key = part.slice(0, split).trim();
    if (key === '') throw new Error('connection string malformed: missing key for assignment');
    parts[key] = part.slice(split + 1).trim();
  }
  const {
    Endpoint: endpoint,
    SharedAccessSignature: sas,
    SharedAccessKey: key,
    SharedAccessKeyName: keyName,
  } = parts;
  if (!endpoint) throw new Error('connection string should have an Endpoint key');
  if (sas) {
    if (key || keyName)
      throw new Error('connection string cannot have both SharedAccessSignature and SharedAccessKey');
  } else if (key && !keyName) {
    throw new Error('connection string with SharedAccessKey should have SharedAccessKeyName');
  } else if (!key && keyName) {
    throw new Error('connection string with SharedAccessKeyName should have SharedAccessKey');
  }
  return { endpoint, eventHubName: parts.EntityPath || undefined };
}
