/**
 * Options of the `alertmanager` sink (docs/sinks-alerting.md). Light on purpose (zod, secrets and the shared
 * HTTP options, URL and TLS rules): the config schema loads it without undici.
 */
import { z } from 'zod';
import { lazy } from '../../lazy.ts';
import { type Secret, secretSchema } from '../../secret.ts';
import { timeoutMsSchema } from '../http/options.ts';
import { tlsOptionsSchema } from '../http/tls.ts';
import { httpSinkUrlProblem } from '../http/url.ts';
import type { SinkFilter } from '../types.ts';

/** Alertmanager's alert-receiving path, appended to each configured base URL. */
export const ALERTS_PATH = '/api/v2/alerts';

/** Prometheus's label name rule (Alertmanager rejects any other name, and the whole alert with it). */
export const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/**
 * The labels the sink sets itself, a fixed set (labels are an alert's identity: fire, re-sends and resolve must
 * match, and a label added later would be a new identity for every alert); a static label may not override them.
 */
export const RESERVED_LABELS = [
  'alertname',
  'event_id',
  'event_type',
  'severity',
  'vm',
  'subscription',
  'resource_group',
  'scale_set',
  'zone',
  'location',
  'affects_this_vm',
] as const;

/**
 * This VM's events only, as PagerDuty, Slack and Teams: Azure broadcasts an event to every VM of an availability
 * set or placement group, and each reporting VM would otherwise raise its own alert for its neighbour's event.
 */
export const ALERTMANAGER_DEFAULT_FILTER: Partial<SinkFilter> = { scope: 'this-vm' };

/** How often the firing alert of every pending event is sent again (Prometheus: every minute). */
export const DEFAULT_RESEND_INTERVAL_SECONDS = 60;
/** A firing alert's endsAt lies this many resend intervals after each send (Prometheus: 4). */
export const DEFAULT_ENDS_AT_INTERVALS = 4;

/** Records per POST (Prometheus sends at most 64 alerts per request by default). */
export const DEFAULT_MAX_BATCH = 64;

/** Why `url` cannot be an Alertmanager base URL, or undefined. Never quotes the URL. */
function baseUrlProblem(url: Secret): string | undefined {
  const parsed = httpSinkUrlProblem(url);
  if (typeof parsed === 'string') return parsed;
  if (parsed.search !== '' || parsed.hash !== '') {
    return `url (${url.origin}) must be a base URL without query or fragment (the sink appends ${ALERTS_PATH})`;
  }
  return undefined;
}

const baseUrlSchema = lazy(() =>
  secretSchema().superRefine((secret, ctx) => {
    if (secret.missing !== undefined) return;
    const problem = baseUrlProblem(secret);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  }),
);

const labelNameSchema = lazy(() =>
  z
    .string()
    .regex(LABEL_NAME, 'a label name must match [a-zA-Z_][a-zA-Z0-9_]* (Prometheus label names)')
    .refine((name) => !(RESERVED_LABELS as readonly string[]).includes(name), {
      message: `the sink sets ${RESERVED_LABELS.join(', ')} itself: choose another label name`,
    })
    .refine((name) => !name.startsWith('__'), { message: 'label names starting with __ are reserved' }),
);

export const alertmanagerOptionsSchema = lazy(() =>
  z
    .object({
      urls: z
        .array(baseUrlSchema())
        .min(1, 'give at least one Alertmanager base URL')
        .describe(
          `base URLs of the Alertmanagers (every one of an HA cluster: each receives every alert), e.g. http://alertmanager:9093; the sink appends ${ALERTS_PATH}. Secrets ("\${ENV}", {env}, {file}) because they may carry basic-auth credentials (https://user:password@host); never logged`,
        ),
      bearerToken: secretSchema()
        .optional()
        .describe(
          'bearer token sent as "Authorization: Bearer <token>" to every URL; a secret, never logged',
        ),
      acknowledgeWhen: z
        .enum(['any', 'all'])
        .default('any')
        .describe(
          'when a batch counts as delivered: any = one Alertmanager accepted it (the others are logged and notification still works while a peer is down); all = every Alertmanager accepted it (retried until they do)',
        ),
      alertname: z
        .string()
        .min(1)
        .default('AzureScheduledEvent')
        .describe('the alertname label of every alert'),
      labels: z
        .record(labelNameSchema(), z.string())
        .default({})
        .describe(
          'static labels added to every alert (e.g. team, environment); they must stay the same between an alert firing and resolving',
        ),
      severityByEventType: z
        .record(z.string().min(1), z.string().min(1))
        .default({})
        .describe(
          'the severity label by EventType (e.g. {Freeze: warning}), over the defaults Terminate/Preempt critical, Reboot/Redeploy warning, Freeze and others info; part of the alert identity',
        ),
      resendIntervalSeconds: z
        .number()
        .int()
        .min(1)
        .max(3600)
        .default(DEFAULT_RESEND_INTERVAL_SECONDS)
        .describe(
          'how often the firing alert of every pending event is sent again to every Alertmanager (from the forwarder state, not the outbox), so a restarted Alertmanager has it back within one interval',
        ),
      endsAtIntervals: z
        .number()
        .int()
        .min(2)
        .max(1440)
        .default(DEFAULT_ENDS_AT_INTERVALS)
        .describe(
          "a firing alert's endsAt lies this many resend intervals after each send: a forwarder that stops re-sending (stopped, VM rebooting or deleted) lets its alerts expire that long after its last send",
        ),
      generatorUrl: z
        .url({ protocol: /^https?$/, error: 'generatorUrl must be an http:// or https:// URL' })
        .optional()
        .describe(
          "generatorURL of every alert (a runbook or dashboard link); default: the VM's Azure portal link (as in Slack and Teams)",
        ),
      maxBatch: z
        .number()
        .int()
        .min(1)
        .max(1000)
        .default(DEFAULT_MAX_BATCH)
        .describe('records (alerts) per POST'),
      timeoutMs: timeoutMsSchema(),
      tls: tlsOptionsSchema().optional(),
    })
    .strict()
    .superRefine((options, ctx) => {
      if (options.bearerToken === undefined) return;
      options.urls.forEach((url, index) => {
        if (url.missing !== undefined) return;
        const parsed = httpSinkUrlProblem(url);
        if (typeof parsed !== 'string' && (parsed.username !== '' || parsed.password !== '')) {
          ctx.addIssue({
            code: 'custom',
            path: ['urls', index],
            message: `urls[${index}] (${url.origin}) carries basic-auth credentials and bearerToken is set: an Alertmanager takes one Authorization header; use one of the two`,
          });
        }
      });
    }),
);

export type AlertmanagerOptions = z.infer<ReturnType<typeof alertmanagerOptionsSchema>>;
