/**
 * The alertmanager sink's registry entry: type, options schema, start-up warnings, and a create() that loads the
 * implementation (sink.ts) only when a sink of this type is configured. Layout: docs/sinks.md.
 */
import { tlsWarnings } from '../http/tls.ts';
import type { SinkFactory } from '../types.ts';
import { ALERTMANAGER_DEFAULT_FILTER, ALERTS_PATH, alertmanagerOptionsSchema } from './options.ts';

export const alertmanagerSinkFactory: SinkFactory<ReturnType<typeof alertmanagerOptionsSchema>> = {
  type: 'alertmanager',
  description:
    'Prometheus Alertmanager (API v2): a firing alert per pending event, re-sent every minute, resolved on completed/canceled; every HA peer',
  get optionsSchema() {
    return alertmanagerOptionsSchema();
  },
  defaultFilter: ALERTMANAGER_DEFAULT_FILTER,
  async create(name, options, context) {
    const { createAlertmanagerSink } = await import('./sink.ts');
    return createAlertmanagerSink(name, options, context);
  },
  warnings(name, options) {
    const warnings: string[] = [];
    options.urls.forEach((secret, index) => {
      let url: URL;
      try {
        url = new URL(secret.reveal());
      } catch {
        return; // not available here (config validate --allow-missing-secrets) or already an error
      }
      const path = url.pathname.replace(/\/+$/, '');
      if (path.endsWith(ALERTS_PATH) || path.endsWith('/api/v1/alerts')) {
        warnings.push(
          `sink ${name}: urls[${index}] (${secret.origin}) already ends in ${path.endsWith(ALERTS_PATH) ? ALERTS_PATH : '/api/v1/alerts'}; ` +
            `the sink appends ${ALERTS_PATH} itself, so alerts go to …${ALERTS_PATH}${ALERTS_PATH} and fail. Give the ` +
            'base URL (e.g. http://alertmanager:9093, or with the --web.route-prefix path).',
        );
      }
      if (url.protocol === 'http:' && (url.username !== '' || url.password !== '')) {
        warnings.push(
          `sink ${name}: urls[${index}] (${secret.origin}) sends basic-auth credentials over plain http://; ` +
            'use https:// so they cannot be read on the network path.',
        );
      }
    });
    return [...warnings, ...tlsWarnings(name, options.tls)];
  },
};
