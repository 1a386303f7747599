/**
 * The alertmanager sink's public surface (layout: docs/sinks.md). The registry imports factory.ts only;
 * importing this file loads the implementation (sink.ts) and with it the HTTP transport.
 */
export { alertmanagerSinkFactory } from './factory.ts';
export {
  type AlertMapping,
  alertAnnotations,
  alertLabels,
  alertTimes,
  type PostableAlert,
  resolvesAlert,
  toAlert,
} from './mapping.ts';
export {
  ALERTS_PATH,
  type AlertmanagerOptions,
  alertmanagerOptionsSchema,
  DEFAULT_MAX_BATCH,
  RESERVED_LABELS,
} from './options.ts';
export {
  AlertmanagerSink,
  alertmanagerErrorText,
  alertsEndpoint,
  combinePeerOutcomes,
  createAlertmanagerSink,
} from './sink.ts';
