/** IMDS source: client, tolerant parser, poller and VM identity cache. */

export { documentFingerprint, sameDocument } from '../capture/document.ts';
export {
  buildInstanceMetadataUrl,
  buildScheduledEventsUrl,
  DEFAULT_API_VERSION,
  DEFAULT_FIRST_REQUEST_TIMEOUT_MS,
  DEFAULT_IMDS_ENDPOINT,
  DEFAULT_INSTANCE_API_VERSION,
  DEFAULT_REQUEST_TIMEOUT_MS,
  ImdsClient,
  type ImdsClientOptions,
  type ScheduledEventsAnswer,
} from './client.ts';
export { ImdsError, ImdsResponseError } from './errors.ts';
export { DEFAULT_IDENTITY_REFRESH_MS, VmIdentityCache, type VmIdentityCacheOptions } from './identity.ts';
export { parseInstanceMetadata, parseNotBefore, parseScheduledEventsDocument } from './parse.ts';
export {
  DEFAULT_POLL_INTERVAL_MS,
  FixedRateSchedule,
  ImdsPoller,
  type ImdsPollerOptions,
  MIN_POLL_INTERVAL_MS,
} from './poller.ts';
