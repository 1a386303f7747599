/**
 * The options every HTTP sink takes alike (webhook, Slack, Teams, Alertmanager, PagerDuty): the per-request
 * timeout and the spacing of requests; TLS trust is `tlsOptionsSchema()` in tls.ts. Light on purpose (zod only):
 * options schemas load it without undici.
 */
import { z } from 'zod';
import { lazy } from '../../lazy.ts';

/** Per-request timeout when the config gives none. */
export const DEFAULT_TIMEOUT_MS = 15_000;

/** The `timeoutMs` option of an HTTP sink. */
export const timeoutMsSchema = lazy(() =>
  z
    .number()
    .int()
    .positive()
    .default(DEFAULT_TIMEOUT_MS)
    .describe('per-request timeout in milliseconds; a timeout is retried'),
);

/** The `minIntervalMs` option of an HTTP sink: its default and what it spaces out differ by destination. */
export function minIntervalMsSchema(defaultMs: number, description: string) {
  return z.number().int().min(0).default(defaultMs).describe(description);
}
