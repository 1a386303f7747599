/**
 * The config's top-level `imds` section as the sources read it, and the gap limit derived from it. Shared by the
 * `imds` source and the `replay` source (a capture was recorded with these settings).
 */
/** The `imds` section of the config (src/config/schema.ts) as this source reads it. */
export interface ImdsSettings {
  endpoint: string;
  apiVersion: string;
  instanceApiVersion: string;
  pollIntervalMs: number;
  firstRequestTimeoutMs: number;
  requestTimeoutMs: number;
  identityRefreshMs: number;
  captureFile?: string | undefined;
}

/** The config sections the `imds` and `replay` sources read besides their `source:` options. */
export interface ImdsSourceSettings {
  readonly imds: ImdsSettings;
}

/**
 * The gap limit: two polls may be missed (one poll interval each) plus one request timeout before the
 * forwarder counts the time between two observations as unwatched.
 */
export function imdsMaxGapMs(settings: Pick<ImdsSettings, 'pollIntervalMs' | 'requestTimeoutMs'>): number {
  return 2 * settings.pollIntervalMs + settings.requestTimeoutMs;
}
