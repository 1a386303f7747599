/**
 * Compliance harness (test/support/sink-harness.ts) for the pagerduty sink, against the Events API v2 double
 * (test/support/pagerduty-events-double.ts): faults answer 503, 400 with PagerDuty's error body, or never; the
 * routing key is the suite's SECRET (32 characters, as PagerDuty requires), echoed back in every failure.
 */
import { PagerDutyEventsDouble } from '../../../support/pagerduty-events-double.ts';
import { ENV_SECRET, type Harness, type HarnessFactory, SECRET } from '../../../support/sink-harness.ts';

function invalidEvent(detail: string) {
  return {
    status: 400,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ status: 'invalid event', message: 'Event object is invalid', errors: [detail] }),
  };
}

export const pagerdutyHarness: HarnessFactory = async (context): Promise<Harness> => {
  const pki = context.tls; // the suite's run over TLS: HTTPS with the test PKI
  const double = await PagerDutyEventsDouble.start(
    pki === undefined ? {} : { tls: { cert: pki.server.cert, key: pki.server.key } },
  );
  return {
    options: {
      routingKey: `\${${ENV_SECRET}}`,
      url: double.url,
      minIntervalMs: 0,
      timeoutMs: 5000,
      ...(pki === undefined ? {} : { tls: { ca: { file: pki.ca.certFile } } }),
    },
    secrets: [SECRET],
    arrived: () => double.accepted.map((e) => String(e.payload?.custom_details?.recordId)),
    breakDestination(kind) {
      if (kind === 'destination') {
        // The integration was deleted: PagerDuty knows the key no more and refuses every event sent with it.
        double.integrationKeys(['0'.repeat(32)]);
        return;
      }
      double.fault(() =>
        kind === 'retryable'
          ? { status: 503, body: `unavailable for routing_key ${SECRET}` }
          : invalidEvent(`'payload.summary' is invalid for routing_key ${SECRET}`),
      );
    },
    repair: () => {
      double.fault(undefined);
      double.integrationKeys(undefined);
    },
    poison(record) {
      double.fault((request) =>
        request.body.includes(record.data.EventId)
          ? invalidEvent(`event ${record.data.EventId} for routing_key ${SECRET} rejected`)
          : undefined,
      );
      return record;
    },
    permanent: true,
    refusal: 'HTTP 400 "Invalid routing key": the Events API v2 integration was deleted',
    hang: () => double.fault(() => ({ hang: true })),
    close: () => double.close(),
  };
};
