/**
 * The webhook sinks: `webhook` (generic, Standard Webhooks-signed CloudEvents), `slack` (incoming webhook,
 * Block Kit) and `teams` (Workflows webhook, Adaptive Card). All three share the HTTP core in transport.ts:
 * one record per request, proxy-aware, rate limited, classified into DeliveryError.
 */

import type { ForwarderEvent, HeartbeatRecord, LifecycleRecord } from '../../domain/index.ts';
import { payloadTooLargeError, withFailedIndex } from '../delivery-errors.ts';
import { summaryLine } from '../format.ts';
import {
  type HttpSinkDeps,
  type HttpTransport,
  httpSinkTransport,
  type OutgoingRequest,
} from '../http/transport.ts';
import type { Sink, SinkContext } from '../types.ts';
import {
  reservedHeaderProblem,
  type SlackOptions,
  type TeamsOptions,
  type WebhookOptions,
} from './options.ts';
import { buildSlackMessage, enforceBlockKitLimits, type SlackMessage } from './slack.ts';
import { cloudEventRequest, decodeSigningSecret, standardWebhookHeaders } from './standard-webhooks.ts';
import { buildTeamsMessage, messageBytes, TEAMS_MAX_BYTES, wrapCard } from './teams.ts';
import { loadTemplate, renderJsonTemplate, type WebhookTemplate } from './template.ts';

/** One request per record; a permanent failure reports which record failed. */
class OneRecordPerRequestSink implements Sink {
  readonly name: string;
  readonly maxBatch = 1;
  readonly #transport: HttpTransport;
  readonly #build: (record: LifecycleRecord) => OutgoingRequest;

  constructor(name: string, transport: HttpTransport, build: (record: LifecycleRecord) => OutgoingRequest) {
    this.name = name;
    this.#transport = transport;
    this.#build = build;
  }

  async deliver(batch: readonly LifecycleRecord[], signal: AbortSignal): Promise<void> {
    for (let i = 0; i < batch.length; i++) {
      try {
        await this.#transport.post(this.#build(batch[i]!), signal);
      } catch (error) {
        throw withFailedIndex(error, i, batch.length);
      }
    }
  }

  close(): Promise<void> {
    return this.#transport.close();
  }
}

/** The generic webhook: one signed CloudEvent per request, lifecycle records and heartbeats alike. */
class CloudEventsWebhookSink extends OneRecordPerRequestSink {
  readonly #post: (event: ForwarderEvent, signal: AbortSignal) => Promise<void>;

  constructor(name: string, transport: HttpTransport, build: (event: ForwarderEvent) => OutgoingRequest) {
    super(name, transport, build);
    this.#post = async (event, signal) => {
      await transport.post(build(event), signal);
    };
  }

  /** A heartbeat is one more signed CloudEvent request (webhook-id: its id). */
  sendHeartbeat(heartbeat: HeartbeatRecord, signal: AbortSignal): Promise<void> {
    return this.#post(heartbeat, signal);
  }
}

/** Creates a generic signed-CloudEvents webhook sink. */
export function createGenericWebhookSink(
  name: string,
  options: WebhookOptions,
  context: SinkContext,
  deps: HttpSinkDeps = {},
): Sink {
  const keys = options.signingSecrets.map((s, i) =>
    decodeSigningSecret(s.reveal(), `sink ${name}: signingSecrets[${i}] (${s.origin})`),
  );
  for (const header of Object.keys(options.headers)) {
    const problem = reservedHeaderProblem(header);
    if (problem !== undefined) throw new Error(`sink ${name}: ${problem}`);
  }
  // Header values, signing secrets and the URL are Secrets: the redactor (src/redact.ts) already knows them.
  const transport = httpSinkTransport(name, options.url, options, context.logger, deps);
  // No signing secrets: a warning of webhookSinkFactory.warnings (config validate, run's start-up).
  return new CloudEventsWebhookSink(name, transport, (record) => {
    const { body, headers } = cloudEventRequest(record, options.mode);
    return {
      body,
      headers: () => {
        const custom: Record<string, string> = {};
        for (const [k, v] of Object.entries(options.headers)) custom[k.toLowerCase()] = v.reveal();
        const timestamp = Math.floor(transport.clock.now() / 1000);
        return { ...custom, ...headers, ...standardWebhookHeaders(keys, record.id, timestamp, body) };
      },
    };
  });
}

function jsonRequest(payload: unknown): OutgoingRequest {
  const body = JSON.stringify(payload);
  return { body, headers: () => ({ 'content-type': 'application/json; charset=utf-8' }) };
}

/** What every chat sink (Slack, Teams) starts from: its optional operator template and its HTTP transport. */
function chatSinkParts(
  name: string,
  options: SlackOptions | TeamsOptions,
  context: SinkContext,
  deps: HttpSinkDeps,
): { template: WebhookTemplate | undefined; transport: HttpTransport } {
  return {
    template: options.template ? loadTemplate(options.template, name) : undefined,
    transport: httpSinkTransport(name, options.url, options, context.logger, deps),
  };
}

/** Creates a Slack incoming-webhook sink. */
export function createSlackSink(
  name: string,
  options: SlackOptions,
  context: SinkContext,
  deps: HttpSinkDeps = {},
): Sink {
  const { template, transport } = chatSinkParts(name, options, context, deps);
  return new OneRecordPerRequestSink(name, transport, (record) => {
    const message: SlackMessage = template
      ? enforceBlockKitLimits(
          renderJsonTemplate(template, record, transport.where, 'slack') as SlackMessage,
          summaryLine(record),
        )
      : buildSlackMessage(record);
    return jsonRequest(message);
  });
}

/**
 * Creates a Microsoft Teams Workflows webhook sink. A retired Office 365 connector URL is a warning of
 * teamsSinkFactory.warnings (printed by config validate, logged by run at start-up).
 */
export function createTeamsSink(
  name: string,
  options: TeamsOptions,
  context: SinkContext,
  deps: HttpSinkDeps = {},
): Sink {
  const { template, transport } = chatSinkParts(name, options, context, deps);
  return new OneRecordPerRequestSink(name, transport, (record) => {
    const message = template
      ? wrapCard(renderJsonTemplate(template, record, transport.where, 'teams'))
      : buildTeamsMessage(record);
    const bytes = messageBytes(message);
    if (bytes > TEAMS_MAX_BYTES) {
      throw payloadTooLargeError(
        `${transport.where}: Teams message is ${bytes} bytes, over the ${TEAMS_MAX_BYTES}-byte limit`,
      );
    }
    return jsonRequest(message);
  });
}
