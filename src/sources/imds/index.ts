/** IMDS source: client, tolerant parser, poller and VM identity cache. */

export { ImdsError, ImdsResponseError } from '../imds-protocol/errors.ts';
export {
  parseInstanceMetadata,
  parseNotBefore,
  parseScheduledEventsDocument,
} from '../imds-protocol/parse.ts';
export {
  buildInstanceMetadataUrl,
  buildScheduledEventsUrl,
  ImdsClient,
  type ImdsClientOptions,
  type ScheduledEventsAnswer,
} from './client.ts';
export {
  DEFAULT_API_VERSION,
  DEFAULT_FIRST_REQUEST_TIMEOUT_MS,
  DEFAULT_IDENTITY_REFRESH_MS,
  DEFAULT_IMDS_ENDPOINT,
  DEFAULT_INSTANCE_API_VERSION,
  DEFAULT_MAX_BACKOFF_MS,
  DEFAULT_MAX_RETRY_AFTER_MS,
  DEFAULT_POLL_INTERVAL_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  MIN_POLL_INTERVAL_MS,
} from './defaults.ts';
export { VmIdentityCache, type VmIdentityCacheOptions } from './identity.ts';
export {
  FixedRateSchedule,
  ImdsPoller,
  type ImdsPollerOptions,
} from './poller.ts';
