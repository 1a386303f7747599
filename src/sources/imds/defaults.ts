/**
 * IMDS source defaults, defined once: the poller, client and identity cache use them, and the defaults of the
 * config's top-level `imds` section (src/config/schema.ts) come from here. Constants only (no imports), so the
 * config loader stays light.
 */

/** The link-local IMDS address inside every Azure VM. Tests never use it. */
export const DEFAULT_IMDS_ENDPOINT = 'http://169.254.169.254';
/** Newest Scheduled Events api-version (adds DurationInSeconds). */
export const DEFAULT_API_VERSION = '2020-07-01';
/** api-version for /metadata/instance. */
export const DEFAULT_INSTANCE_API_VERSION = '2021-02-01';
/** The first Scheduled Events call enables the feature and may take up to 2 minutes. */
export const DEFAULT_FIRST_REQUEST_TIMEOUT_MS = 120_000;
export const DEFAULT_REQUEST_TIMEOUT_MS = 5_000;
export const DEFAULT_IDENTITY_REFRESH_MS = 60 * 60 * 1000;
export const DEFAULT_POLL_INTERVAL_MS = 1000;
/** The smallest poll interval allowed: IMDS allows about 5 requests/s per VM, shared by every agent on it. */
export const MIN_POLL_INTERVAL_MS = 200;
export const DEFAULT_MAX_BACKOFF_MS = 10_000;
export const DEFAULT_MAX_RETRY_AFTER_MS = 60_000;
