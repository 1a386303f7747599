/**
 * Compliance harnesses (test/support/sink-harness.ts) for the HTTP chat and webhook sinks: webhook, slack and
 * teams, each against a real local HTTP server that answers by status, by content (poison) or never (hang);
 * over HTTPS when the suite asks (HarnessContext.tls).
 */

import { HttpSinkServer } from '../../../support/http-sink-server.ts';
import {
  ENV_SECRET,
  type Harness,
  type HarnessFactory,
  idsInBodies,
  SECRET,
} from '../../../support/sink-harness.ts';

/** How each service refuses every message (the webhook deleted, its token revoked), echoing the secret. */
const REFUSALS = {
  webhook: { status: 401, body: `{"error":"invalid token ${SECRET}"}` },
  slack: { status: 404, body: 'no_service' },
  teams: { status: 403, body: `Forbidden: the flow behind /hook/${SECRET} is turned off` },
} as const;
const REFUSAL_TEXT = {
  webhook: 'HTTP 401: the token in X-Api-Key was revoked',
  slack: 'HTTP 404 no_service: the incoming webhook was removed',
  teams: 'HTTP 403: the Workflows flow was turned off',
} as const;

export function httpHarness(type: 'webhook' | 'slack' | 'teams'): HarnessFactory {
  return async (context): Promise<Harness> => {
    const pki = context.tls;
    const server = await HttpSinkServer.start(
      { status: 200, body: 'ok' },
      pki === undefined ? {} : { tls: { cert: pki.server.cert, key: pki.server.key } },
    );
    const options: Record<string, unknown> = { url: server.url(`/hook/${SECRET}`) };
    if (pki !== undefined) options.tls = { ca: { file: pki.ca.certFile } };
    if (type === 'webhook') options.headers = { 'X-Api-Key': `\${${ENV_SECRET}}` };
    const poisoned = new Set<string>();
    const ok = () => server.requests.filter((_, i) => !failed.has(i)).map((r) => r.body);
    const failed = new Set<number>();
    let broken = false;
    return {
      options,
      secrets: [SECRET, server.url(`/hook/${SECRET}`)],
      arrived: () => idsInBodies(ok(), context.known()),
      breakDestination(kind) {
        broken = true;
        server.setDefault(
          kind === 'retryable'
            ? { status: 503, body: `busy, retry ${SECRET}` }
            : kind === 'record'
              ? { status: 400, body: `rejected request to ${server.url(`/hook/${SECRET}`)}` }
              : REFUSALS[type],
        );
      },
      repair() {
        // requests answered while broken did not deliver
        if (broken) for (let i = 0; i < server.requests.length; i++) failed.add(i);
        broken = false;
        server.setDefault({ status: 200, body: 'ok' });
        server.setResponder(undefined);
        poisoned.clear();
      },
      poison(record) {
        poisoned.add(record.data.EventId);
        server.setResponder((request) => {
          if (![...poisoned].some((id) => request.body.includes(id))) return undefined;
          failed.add(server.requests.indexOf(request)); // answered 400: not delivered
          return { status: 400, body: `rejected record ${record.data.EventId} ${SECRET}` };
        });
        return record;
      },
      permanent: true,
      refusal: REFUSAL_TEXT[type],
      hang() {
        broken = true;
        server.setDefault({ hang: true });
      },
      close: () => server.close(),
    };
  };
}
