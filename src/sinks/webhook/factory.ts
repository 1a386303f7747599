/**
 * Registry entries of the webhook, Slack and Teams sinks. Light on purpose: the options schemas need only zod;
 * templates (mustache) and payload builders load in create(), i.e. only when a sink of one of these types is
 * configured, and the HTTP client (undici) at its first delivery.
 */
import type { Secret } from '../../secret.ts';
import { tlsWarnings } from '../http/tls.ts';
import type { SinkFactory } from '../types.ts';
import {
  CHAT_DEFAULT_FILTER,
  slackOptionsSchema,
  teamsOptionsSchema,
  webhookOptionsSchema,
} from './options.ts';
import { isRetiredConnectorUrl } from './teams.ts';

export const webhookSinkFactory: SinkFactory<ReturnType<typeof webhookOptionsSchema>> = {
  type: 'webhook',
  description: 'Generic HTTP webhook: CloudEvents (structured or binary) signed per Standard Webhooks 1.0',
  get optionsSchema() {
    return webhookOptionsSchema();
  },
  heartbeats: { default: false },
  async create(name, options, context) {
    const { createGenericWebhookSink } = await import('./sink.ts');
    return createGenericWebhookSink(name, options, context);
  },
  warnings(name, options) {
    return [
      ...(options.signingSecrets.length === 0
        ? [`sink ${name}: no signingSecrets configured; webhook requests are not signed`]
        : []),
      ...tlsWarnings(name, options.tls, revealedUrl(options.url)),
    ];
  },
};

export const slackSinkFactory: SinkFactory<ReturnType<typeof slackOptionsSchema>> = {
  type: 'slack',
  description: 'Slack incoming webhook: Block Kit message per lifecycle record',
  get optionsSchema() {
    return slackOptionsSchema();
  },
  defaultFilter: CHAT_DEFAULT_FILTER,
  async create(name, options, context) {
    const { createSlackSink } = await import('./sink.ts');
    return createSlackSink(name, options, context);
  },
  warnings(name, options) {
    return tlsWarnings(name, options.tls, revealedUrl(options.url));
  },
};

export const teamsSinkFactory: SinkFactory<ReturnType<typeof teamsOptionsSchema>> = {
  type: 'teams',
  description: 'Microsoft Teams Workflows webhook: Adaptive Card 1.4 per lifecycle record',
  get optionsSchema() {
    return teamsOptionsSchema();
  },
  defaultFilter: CHAT_DEFAULT_FILTER,
  async create(name, options, context) {
    const { createTeamsSink } = await import('./sink.ts');
    return createTeamsSink(name, options, context);
  },
  warnings(name, options) {
    return [
      ...retiredConnectorWarnings(name, options.url),
      ...tlsWarnings(name, options.tls, revealedUrl(options.url)),
    ];
  },
};

/** The URL, or undefined when it is not available here (config validate --allow-missing-secrets). */
function revealedUrl(url: Secret): string | undefined {
  return url.missing === undefined ? url.reveal() : undefined;
}

/** The warning about a retired Office 365 connector URL (messages will not arrive). */
function retiredConnectorWarnings(name: string, secretUrl: Secret): string[] {
  let url: URL;
  try {
    url = new URL(secretUrl.reveal());
  } catch {
    return []; // not available here (config validate --allow-missing-secrets) or already an error
  }
  if (!isRetiredConnectorUrl(url)) return [];
  return [
    `sink ${name}: the url is a retired Office 365 connector (${url.hostname}); Microsoft has retired these ` +
      'connectors and messages will not arrive. Create a Teams Workflow ("When a Teams webhook request is ' +
      'received") and configure its URL instead.',
  ];
}
