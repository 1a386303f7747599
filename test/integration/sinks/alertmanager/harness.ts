/**
 * Compliance harness (test/support/sink-harness.ts) for the alertmanager sink, against the local double of
 * Alertmanager's /api/v2/alerts (test/support/alertmanager-double.ts; the real Alertmanager is tested in the
 * observability tier). The URL carries basic-auth credentials whose password is the suite's SECRET, echoed
 * back in every failure. Alertmanager answers a batch with one status and does not say which alert was invalid:
 * the sink declares failedIndexUnknown.
 */
import { AlertmanagerDouble } from '../../../support/alertmanager-double.ts';
import { type Harness, type HarnessFactory, idsInBodies, SECRET } from '../../../support/sink-harness.ts';

export const alertmanagerHarness: HarnessFactory = async (context): Promise<Harness> => {
  const pki = context.tls; // the suite's run over TLS: HTTPS with the test PKI
  const double = await AlertmanagerDouble.start(
    { user: 'sef', password: SECRET },
    pki === undefined ? {} : { tls: { cert: pki.server.cert, key: pki.server.key } },
  );
  const url = double.baseUrl.replace(/^(https?):\/\//, `$1://sef:${SECRET}@`);
  const rejected = (text: string) => ({
    status: 400,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(text),
  });
  return {
    options: {
      urls: [url],
      timeoutMs: 5000,
      ...(pki === undefined ? {} : { tls: { ca: { file: pki.ca.certFile } } }),
    },
    secrets: [SECRET, url],
    arrived: () => idsInBodies(double.acceptedBodies, context.known()),
    breakDestination(kind) {
      double.fault(() =>
        kind === 'retryable'
          ? { status: 503, body: `cluster not ready for sef:${SECRET}` }
          : kind === 'record'
            ? rejected(`invalid label set from ${url}`)
            : { status: 401, body: `Unauthorized: bad credentials sef:${SECRET}` },
      );
    },
    repair: () => double.fault(undefined),
    poison(record) {
      double.fault((request) =>
        request.body.includes(record.data.EventId)
          ? rejected(`start time must be before end time (sef:${SECRET})`)
          : undefined,
      );
      return record;
    },
    failedIndexUnknown:
      'Alertmanager answers a batch of alerts with one status and does not say which alert it rejected',
    permanent: true,
    refusal: 'HTTP 401 from the basic-auth proxy in front of Alertmanager: the password was changed',
    hang: () => double.fault(() => ({ hang: true })),
    close: () => double.close(),
  };
};
