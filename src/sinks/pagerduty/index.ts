/**
 * The pagerduty sink's public surface (layout: docs/sinks.md). The registry imports factory.ts only; importing
 * this file loads the implementation (sink.ts) and with it the HTTP transport.
 */
export { pagerdutySinkFactory } from './factory.ts';
export {
  dedupKey,
  eventAction,
  PAGERDUTY_CLIENT,
  PAGERDUTY_LIMITS,
  type PagerDutyEvent,
  pagerDutyErrorText,
  type SeverityMap,
  severityOf,
  toPagerDutyEvent,
} from './mapping.ts';
export {
  DEFAULT_SEVERITY_BY_EVENT_TYPE,
  PAGERDUTY_DEFAULT_FILTER,
  PAGERDUTY_EU_EVENTS_URL,
  PAGERDUTY_EVENTS_URL,
  PAGERDUTY_SEVERITIES,
  type PagerDutyOptions,
  type PagerDutySeverity,
  pagerdutyOptionsSchema,
} from './options.ts';
export { createPagerDutySink, PagerDutySink } from './sink.ts';
