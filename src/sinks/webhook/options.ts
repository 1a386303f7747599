/**
 * Options of the webhook, Slack and Teams sinks. Light on purpose (zod and secrets only): the config schema and
 * the CLI load this without the HTTP client (undici) or the template engine (mustache).
 */
import { z } from 'zod';
import { secretSchema } from '../../config/secret.ts';
import type { SinkFilter } from '../types.ts';

/** Per-request timeout when the config gives none. */
export const DEFAULT_TIMEOUT_MS = 15_000;

/** Slack and Teams: this VM only, the four main transitions (a 100-VM availability set must not post 100 times). */
export const CHAT_DEFAULT_FILTER: Partial<SinkFilter> = {
  scope: 'this-vm',
  transitions: ['scheduled', 'started', 'completed', 'canceled'],
};

const timeoutMs = z
  .number()
  .int()
  .positive()
  .default(DEFAULT_TIMEOUT_MS)
  .describe('per-request timeout in milliseconds; a timeout is retried');
const url = secretSchema().describe(
  // biome-ignore lint/suspicious/noTemplateCurlyInString: documents the literal ${ENV} secret syntax
  'webhook URL as a secret ("${ENV}", {env: NAME} or {file: PATH}); never logged (errors show scheme and host only)',
);

export const webhookOptionsSchema = z
  .object({
    url,
    mode: z
      .enum(['structured', 'binary'])
      .default('structured')
      .describe('CloudEvents HTTP content mode: the whole CloudEvent as the body, or data + ce-* headers'),
    signingSecrets: z
      .array(secretSchema())
      .default([])
      .describe('Standard Webhooks secrets (whsec_...); several during rotation, each adds a v1 signature'),
    headers: z
      .record(z.string().min(1), secretSchema())
      .default({})
      .describe('extra request headers; values are secrets (e.g. an Authorization header)'),
    timeoutMs,
    minIntervalMs: z
      .number()
      .int()
      .min(0)
      .default(0)
      .describe('minimum milliseconds between requests (0 = no limit)'),
  })
  .strict();

/** Slack and Teams take the same options; only what a template renders differs. */
function chatOptionsSchema(templateRenders: string) {
  return z
    .object({
      url,
      template: z
        .string()
        .min(1)
        .optional()
        .describe(`Mustache template file rendering ${templateRenders} (logic-less: no code, no network)`),
      timeoutMs,
      minIntervalMs: z
        .number()
        .int()
        .min(0)
        .default(1000)
        .describe('minimum milliseconds between messages (Slack allows about one per second per webhook)'),
    })
    .strict();
}

export const slackOptionsSchema = chatOptionsSchema('the whole message JSON ({text, blocks})');
export const teamsOptionsSchema = chatOptionsSchema('the Adaptive Card JSON (the attachment content)');

export type WebhookOptions = z.infer<typeof webhookOptionsSchema>;
export type SlackOptions = z.infer<typeof slackOptionsSchema>;
export type TeamsOptions = z.infer<typeof teamsOptionsSchema>;
