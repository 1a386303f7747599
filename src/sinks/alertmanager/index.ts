/**
 * The alertmanager sink's public surface (layout: docs/sinks.md). The registry imports factory.ts only;
 * importing this file loads the implementation (sink.ts) and with it the HTTP transport.
 */
export { alertmanagerSinkFactory } from './factory.ts';
export {
  type AlertMapping,
  alertAnnotations,
  alertLabels,
  alertSeverity,
  alertTimes,
  type PostableAlert,
  resolvesAlert,
  toAlert,
} from './mapping.ts';
export {
  ALERTMANAGER_DEFAULT_FILTER,
  ALERTS_PATH,
  type AlertmanagerOptions,
  alertmanagerOptionsSchema,
  DEFAULT_ENDS_AT_INTERVALS,
  DEFAULT_MAX_BATCH,
  DEFAULT_RESEND_INTERVAL_SECONDS,
  RESERVED_LABELS,
} from './options.ts';
export {
  AlertmanagerSink,
  alertmanagerErrorText,
  alertsEndpoint,
  combinePeerOutcomes,
  createAlertmanagerSink,
} from './sink.ts';
