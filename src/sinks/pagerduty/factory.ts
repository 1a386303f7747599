/**
 * The pagerduty sink's registry entry: type, options schema, default filter, start-up warnings, and a create()
 * that loads the implementation (sink.ts) only when a sink of this type is configured. Layout: docs/sinks.md.
 */
import { tlsWarnings } from '../http/tls.ts';
import type { SinkFactory } from '../types.ts';
import {
  PAGERDUTY_DEFAULT_FILTER,
  PAGERDUTY_EU_EVENTS_URL,
  PAGERDUTY_EVENTS_URL,
  pagerdutyOptionsSchema,
} from './options.ts';

/** Length of a PagerDuty integration (routing) key. */
const ROUTING_KEY_LENGTH = 32;

export const pagerdutySinkFactory: SinkFactory<ReturnType<typeof pagerdutyOptionsSchema>> = {
  type: 'pagerduty',
  description:
    'PagerDuty Events API v2: trigger on scheduled/started, resolve on completed/canceled (dedup_key)',
  get optionsSchema() {
    return pagerdutyOptionsSchema();
  },
  defaultFilter: PAGERDUTY_DEFAULT_FILTER,
  async create(name, options, context) {
    const { createPagerDutySink } = await import('./sink.ts');
    return createPagerDutySink(name, options, context);
  },
  warnings(name, options) {
    const warnings: string[] = [];
    if (options.routingKey.missing === undefined) {
      const length = options.routingKey.reveal().length;
      if (length !== ROUTING_KEY_LENGTH) {
        warnings.push(
          `sink ${name}: routingKey (${options.routingKey.origin}) is ${length} characters, not the ` +
            `${ROUTING_KEY_LENGTH} of a PagerDuty integration key; PagerDuty rejects such events (400). Copy the ` +
            'Integration Key of the service\'s "Events API V2" integration (not a REST API key).',
        );
      }
    }
    const host = new URL(options.url).host;
    const known = [PAGERDUTY_EVENTS_URL, PAGERDUTY_EU_EVENTS_URL].map((u) => new URL(u).host);
    if (!known.includes(host) && new URL(options.url).protocol !== 'https:') {
      warnings.push(
        `sink ${name}: url ${options.url} is plain http:// and not PagerDuty's endpoint; the routing key is sent ` +
          `unencrypted. Use ${PAGERDUTY_EVENTS_URL} (or ${PAGERDUTY_EU_EVENTS_URL}).`,
      );
    }
    return [...warnings, ...tlsWarnings(name, options.tls)];
  },
};
