/**
 * Options of the `pagerduty` sink (PagerDuty Events API v2; docs/sinks-alerting.md). Light on purpose (zod,
 * secrets and the shared HTTP options, URL and TLS rules): the config schema loads it without undici.
 */
import { z } from 'zod';
import { lazy } from '../../lazy.ts';
import { secretSchema } from '../../secret.ts';
import { minIntervalMsSchema, timeoutMsSchema } from '../http/options.ts';
import { tlsOptionsSchema } from '../http/tls.ts';
import type { SinkFilter } from '../types.ts';

/** PagerDuty's Events API v2 endpoint (US service region). */
export const PAGERDUTY_EVENTS_URL = 'https://events.pagerduty.com/v2/enqueue';
/** The same in the EU service region. */
export const PAGERDUTY_EU_EVENTS_URL = 'https://events.eu.pagerduty.com/v2/enqueue';

/** The Events API v2 severities. */
export const PAGERDUTY_SEVERITIES = ['critical', 'error', 'warning', 'info'] as const;
export type PagerDutySeverity = (typeof PAGERDUTY_SEVERITIES)[number];

/** Severity by EventType unless configured otherwise: losing the VM pages hardest. */
export const DEFAULT_SEVERITY_BY_EVENT_TYPE: Readonly<Record<string, PagerDutySeverity>> = {
  Terminate: 'critical',
  Preempt: 'critical',
  Reboot: 'error',
  Redeploy: 'error',
  Freeze: 'warning',
};

/**
 * This VM's events only: Azure broadcasts an event to every VM of an availability set or placement group, and
 * each reporting VM would otherwise open its own alert for its neighbour's event.
 */
export const PAGERDUTY_DEFAULT_FILTER: Partial<SinkFilter> = { scope: 'this-vm' };

/** Why `url` cannot be the Events API endpoint, or undefined (it is not a secret: it may be quoted). */
export function pagerDutyUrlProblem(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `url ${JSON.stringify(url)} is not a valid URL; expected e.g. ${PAGERDUTY_EVENTS_URL}`;
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    return `url must be an http:// or https:// URL, not ${parsed.protocol} (e.g. ${PAGERDUTY_EVENTS_URL})`;
  }
  if (parsed.username !== '' || parsed.password !== '') {
    return 'url must not carry credentials: PagerDuty authenticates events by routingKey';
  }
  return undefined;
}

const severitySchema = lazy(() => z.enum(PAGERDUTY_SEVERITIES));

export const pagerdutyOptionsSchema = lazy(() =>
  z
    .object({
      routingKey: secretSchema().describe(
        // biome-ignore lint/suspicious/noTemplateCurlyInString: documents the literal ${ENV} secret syntax
        'the integration key (routing key, 32 characters) of an Events API v2 integration on a PagerDuty service; a secret ("${ENV}", {env}, {file}), never logged',
      ),
      url: z
        .string()
        .default(PAGERDUTY_EVENTS_URL)
        .superRefine((url, ctx) => {
          const problem = pagerDutyUrlProblem(url);
          if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
        })
        .describe(
          `Events API v2 endpoint: ${PAGERDUTY_EVENTS_URL}, or ${PAGERDUTY_EU_EVENTS_URL} for an account in the EU service region`,
        ),
      severityByEventType: z
        .record(z.string().min(1), severitySchema())
        .default({})
        .describe(
          'severity (critical, error, warning, info) by EventType, over the defaults Terminate/Preempt critical, Reboot/Redeploy error, Freeze warning',
        ),
      defaultSeverity: severitySchema()
        .default('warning')
        .describe('severity of an EventType not in the map'),
      timeoutMs: timeoutMsSchema(),
      minIntervalMs: minIntervalMsSchema(
        500,
        'minimum milliseconds between events (PagerDuty rate-limits the Events API per routing key)',
      ),
      tls: tlsOptionsSchema().optional(),
    })
    .strict(),
);

export type PagerDutyOptions = z.infer<ReturnType<typeof pagerdutyOptionsSchema>>;
