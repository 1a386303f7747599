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

const timeoutMs = z.number().int().positive().default(DEFAULT_TIMEOUT_MS);

export const webhookOptionsSchema = z
  .object({
    url: secretSchema(),
    /** CloudEvents HTTP content mode. */
    mode: z.enum(['structured', 'binary']).default('structured'),
    /** Standard Webhooks secrets (whsec_…); several during rotation, each produces a signature. */
    signingSecrets: z.array(secretSchema()).default([]),
    /** Extra request headers; values are secrets (e.g. an Authorization header). */
    headers: z.record(z.string().min(1), secretSchema()).default({}),
    timeoutMs,
    /** Minimum milliseconds between requests (0 = no limit). */
    minIntervalMs: z.number().int().min(0).default(0),
  })
  .strict();

export const slackOptionsSchema = z
  .object({
    url: secretSchema(),
    /** Mustache template file rendering the whole message JSON ({text, blocks}). */
    template: z.string().min(1).optional(),
    timeoutMs,
    /** Slack allows about one message per second per webhook. */
    minIntervalMs: z.number().int().min(0).default(1000),
  })
  .strict();

export const teamsOptionsSchema = z
  .object({
    url: secretSchema(),
    /** Mustache template file rendering the Adaptive Card JSON (the `content`). */
    template: z.string().min(1).optional(),
    timeoutMs,
    minIntervalMs: z.number().int().min(0).default(1000),
  })
  .strict();

export type WebhookOptions = z.infer<typeof webhookOptionsSchema>;
export type SlackOptions = z.infer<typeof slackOptionsSchema>;
export type TeamsOptions = z.infer<typeof teamsOptionsSchema>;
