/**
 * Options of the webhook, Slack and Teams sinks. Light on purpose (zod and secrets only): the config schema and
 * the CLI load this without the HTTP client (undici) or the template engine (mustache).
 */
import { createRequire } from 'node:module';
import { z } from 'zod';
import { errorMessage } from '../../errors.ts';
import { lazy } from '../../lazy.ts';
import { type Secret, secretSchema } from '../../secret.ts';
import { minIntervalMsSchema, timeoutMsSchema } from '../http/options.ts';
import { tlsOptionsSchema } from '../http/tls.ts';
import { httpSinkUrlProblem } from '../http/url.ts';
import type { SinkFilter } from '../types.ts';
import { decodeSigningSecret } from './standard-webhooks.ts';

const { readFileSync } = process.getBuiltinModule('node:fs');

/** Slack and Teams: this VM only, the four main transitions (a 100-VM availability set must not post 100 times). */
export const CHAT_DEFAULT_FILTER: Partial<SinkFilter> = {
  scope: 'this-vm',
  transitions: ['scheduled', 'started', 'completed', 'canceled'],
};

/** Headers the sinks set themselves (plus every `ce-*` header); a configured header may not override them. */
const RESERVED_HEADERS = new Set([
  'content-type',
  'content-length',
  'host',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
]);

/** Why `header` cannot be configured, or undefined when it can. */
export function reservedHeaderProblem(header: string): string | undefined {
  const lower = header.toLowerCase();
  if (RESERVED_HEADERS.has(lower) || lower.startsWith('ce-')) {
    return `header ${header} is set by the sink and cannot be configured`;
  }
  return undefined;
}

/**
 * Reads a Slack/Teams template file and checks that it parses as a Mustache template (at configuration time,
 * and again when the sink is built). Mustache loads only when a template is configured.
 */
export function readTemplateFile(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new Error(`cannot read template ${path}: ${code}`);
  }
  const mustache = createRequire(import.meta.url)('mustache') as { parse(template: string): unknown };
  try {
    mustache.parse(text);
  } catch (error) {
    throw new Error(`template ${path} is not a valid Mustache template: ${errorMessage(error)}`);
  }
  return text;
}

/** Adds the problem `check` throws as an issue (secrets that are missing here are not checked). */
function secretCheck(check: (secret: Secret) => void) {
  return (secret: Secret, ctx: z.RefinementCtx) => {
    if (secret.missing !== undefined) return;
    try {
      check(secret);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: errorMessage(error) });
    }
  };
}

const urlSchema = lazy(() =>
  secretSchema()
    .superRefine(
      secretCheck((secret) => {
        const problem = httpSinkUrlProblem(secret);
        if (typeof problem === 'string') throw new Error(problem);
      }),
    )
    .describe(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: documents the literal ${ENV} secret syntax
      'webhook URL as a secret ("${ENV}", {env: NAME} or {file: PATH}); never logged (errors show scheme and host only)',
    ),
);

export const webhookOptionsSchema = lazy(() =>
  z
    .object({
      url: urlSchema(),
      mode: z
        .enum(['structured', 'binary'])
        .default('structured')
        .describe('CloudEvents HTTP content mode: the whole CloudEvent as the body, or data + ce-* headers'),
      signingSecrets: z
        .array(
          secretSchema().superRefine(
            secretCheck((secret) =>
              decodeSigningSecret(secret.reveal(), `signing secret (${secret.origin})`),
            ),
          ),
        )
        .default([])
        .describe('Standard Webhooks secrets (whsec_...); several during rotation, each adds a v1 signature'),
      headers: z
        .record(
          z
            .string()
            .min(1)
            .superRefine((header, ctx) => {
              const problem = reservedHeaderProblem(header);
              if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
            }),
          secretSchema(),
        )
        .default({})
        .describe('extra request headers; values are secrets (e.g. an Authorization header)'),
      timeoutMs: timeoutMsSchema(),
      minIntervalMs: minIntervalMsSchema(0, 'minimum milliseconds between requests (0 = no limit)'),
      tls: tlsOptionsSchema().optional(),
    })
    .strict(),
);

/** Slack and Teams take the same options; only what a template renders and their rate limits differ. */
function chatOptionsSchema(templateRenders: string, rateLimit: string) {
  return z
    .object({
      url: urlSchema(),
      template: z
        .string()
        .min(1)
        .superRefine((path, ctx) => {
          try {
            readTemplateFile(path);
          } catch (error) {
            ctx.addIssue({ code: 'custom', message: errorMessage(error) });
          }
        })
        .optional()
        .describe(`Mustache template file rendering ${templateRenders} (logic-less: no code, no network)`),
      timeoutMs: timeoutMsSchema(),
      minIntervalMs: minIntervalMsSchema(1000, `minimum milliseconds between messages (${rateLimit})`),
      tls: tlsOptionsSchema().optional(),
    })
    .strict();
}

export const slackOptionsSchema = lazy(() =>
  chatOptionsSchema(
    'the whole message JSON ({text, blocks})',
    'Slack allows about one per second per webhook',
  ),
);
export const teamsOptionsSchema = lazy(() =>
  chatOptionsSchema(
    'the Adaptive Card JSON (the attachment content)',
    "a Teams Workflow publishes no per-webhook limit, but every run counts against the flow owner's Power " +
      'Platform request limits and throttled runs answer 429: about one per second is safe',
  ),
);

export type WebhookOptions = z.infer<ReturnType<typeof webhookOptionsSchema>>;
export type SlackOptions = z.infer<ReturnType<typeof slackOptionsSchema>>;
export type TeamsOptions = z.infer<ReturnType<typeof teamsOptionsSchema>>;
