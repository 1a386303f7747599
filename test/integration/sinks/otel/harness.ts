/**
 * Compliance harness (test/support/sink-harness.ts) for the otel sink: a real local OTLP/HTTP receiver that
 * answers by status, rejects a whole export request carrying a poisoned record, or never answers (hang); over
 * HTTPS when the suite asks (HarnessContext.tls).
 */
import { type OtlpHttpReceiver, startOtlpHttpReceiver } from '../../../support/otlp-receiver.ts';
import { ENV_SECRET, type Harness, type HarnessContext, SECRET } from '../../../support/sink-harness.ts';

export async function otelHarness(context: HarnessContext): Promise<Harness> {
  const pki = context.tls;
  const receiver: OtlpHttpReceiver = await startOtlpHttpReceiver(
    pki === undefined ? {} : { tls: { cert: pki.server.cert, key: pki.server.key } },
  );
  return {
    options: {
      endpoint: receiver.url,
      headers: { authorization: `\${${ENV_SECRET}}` },
      timeoutMs: 5000,
      ...(pki === undefined ? {} : { tls: { ca: { file: pki.ca.certFile } } }),
    },
    secrets: [SECRET],
    arrived: () => receiver.acceptedRecords().map((r) => String(r.attributes['cloudevents.event_id'])),
    breakDestination(kind) {
      receiver.setDefault(
        kind === 'retryable'
          ? { status: 503, body: SECRET }
          : kind === 'record'
            ? { status: 400, body: `bad log record ${SECRET}` }
            : { status: 401, body: `bad token ${SECRET}` },
      );
    },
    repair() {
      receiver.setDefault({ status: 200 });
      receiver.setResponder(undefined);
    },
    poison(record) {
      receiver.setResponder((received) =>
        received.some((r) => r.attributes['cloudevents.event_id'] === record.id)
          ? { status: 400, body: `invalid log record ${record.id} ${SECRET}` }
          : undefined,
      );
      return record;
    },
    failedIndexUnknown: 'an OTLP export request is accepted or rejected as a whole',
    permanent: true,
    refusal: 'HTTP 401: the collector refuses the authorization header',
    hang: () => receiver.setDefault({ hang: true }),
    close: () => receiver.close(),
  };
}
