/**
 * The alertmanager sink in the npm test tier: the pure mapping (labels identical between fire and resolve,
 * endsAt past NotBefore), how the outcomes of several Alertmanagers combine (acknowledgeWhen), configuration
 * checks and warnings, and delivery to two local doubles of Alertmanager's /api/v2/alerts
 * (test/support/alertmanager-double.ts). The real Alertmanager: test/observability/alertmanager.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  alertLabels,
  alertmanagerOptionsSchema,
  alertmanagerSinkFactory,
  alertsEndpoint,
  alertTimes,
  combinePeerOutcomes,
  createAlertmanagerSink,
  toAlert,
} from '../../../../src/sinks/alertmanager/index.ts';
import { httpStatusError, networkError } from '../../../../src/sinks/delivery-errors.ts';
import { DeliveryError, type Sink } from '../../../../src/sinks/types.ts';
import { AlertmanagerDouble } from '../../../support/alertmanager-double.ts';
import { makeRecord } from '../../../support/records.ts';
import { context, signal } from '../../../support/sink-tests.ts';

const mapping = { alertname: 'AzureScheduledEvent', labels: { team: 'ops' }, endsAtMarginSeconds: 3600 };
const MINUTE = 60_000;

describe('alert mapping', () => {
  it('every transition of one event carries the same labels; only completed and canceled resolve', () => {
    const transitions = ['scheduled', 'updated', 'approved', 'started', 'completed', 'canceled'] as const;
    const labels = transitions.map((t) => alertLabels(makeRecord(t), mapping));
    for (const l of labels) expect(l).toEqual(labels[0]);
    expect(labels[0]).toEqual({
      alertname: 'AzureScheduledEvent',
      event_id: '3DA1B9AA-1111-2222-3333-444455556666',
      event_type: 'Reboot',
      vm: 'vm-web-01',
      zone: '2',
      location: 'westeurope',
      affects_this_vm: 'true',
      team: 'ops',
    });
    const now = Date.parse('2025-09-19T18:14:47.123Z');
    for (const t of ['completed', 'canceled'] as const) {
      expect(alertTimes(makeRecord(t), 3600).endsAt).toBe(now);
    }
  });

  it('a firing alert ends the margin past NotBefore + DurationInSeconds, or past the record time without NotBefore', () => {
    const scheduled = makeRecord('scheduled', { durationInSeconds: 600 });
    const notBefore = Date.parse(scheduled.data.notBeforeUtc!);
    expect(alertTimes(scheduled, 3600)).toEqual({
      startsAt: Date.parse(scheduled.time),
      endsAt: notBefore + 600_000 + 3_600_000,
    });
    const started = makeRecord('started'); // Started: NotBefore is empty
    expect(started.data.notBeforeUtc).toBeNull();
    expect(alertTimes(started, 3600).endsAt).toBe(Date.parse(started.time) + 3_600_000);
    // NotBefore already passed: from the record's time
    const late = makeRecord('scheduled', {
      notBefore: new Date(Date.parse('2025-09-19T18:14:47Z') - 5 * MINUTE).toUTCString(),
    });
    expect(alertTimes(late, 3600).endsAt).toBe(Date.parse(late.time) + 3_600_000);
    const alert = toAlert(scheduled, { ...mapping, generatorUrl: 'https://runbooks.example/azure' });
    expect(alert.generatorURL).toBe('https://runbooks.example/azure');
    expect(alert.annotations).toMatchObject({
      event_status: 'Scheduled',
      duration_in_seconds: '600',
      transition: 'scheduled',
    });
  });
});

describe('peers (acknowledgeWhen)', () => {
  const where = 'sink am';
  const down = networkError('peer down');
  const rejected = httpStatusError('peer rejected', 400, { retryable: false });
  const busy = httpStatusError('peer busy', 503, { retryable: true, retryAfterMs: 2000 });
  const busier = httpStatusError('peer busier', 429, { retryable: true, retryAfterMs: 9000 });

  it('any: delivered when one peer accepted; permanent only when every peer failed permanently', () => {
    expect(combinePeerOutcomes([undefined, down], 'any', where)).toBeNull();
    expect(combinePeerOutcomes([rejected, rejected], 'any', where)).toMatchObject({
      retryable: false,
      code: 'http-400',
    });
    expect(combinePeerOutcomes([rejected, busy], 'any', where)).toMatchObject({
      retryable: true,
      code: 'http-503',
    });
    expect(combinePeerOutcomes([busy, busier], 'any', where)?.retryAfterMs).toBe(2000);
  });

  it('all: delivered only when every peer accepted; permanent when one failed permanently', () => {
    expect(combinePeerOutcomes([undefined, undefined], 'all', where)).toBeNull();
    expect(combinePeerOutcomes([undefined, down], 'all', where)).toMatchObject({
      retryable: true,
      code: 'network',
    });
    expect(combinePeerOutcomes([busy, rejected], 'all', where)).toMatchObject({
      retryable: false,
      code: 'http-400',
    });
    expect(combinePeerOutcomes([busy, busier], 'all', where)?.retryAfterMs).toBe(9000);
  });
});

describe('configuration', () => {
  it('turns URL credentials into a Basic Authorization header and appends the alerts path', () => {
    const { url, basicAuth } = alertsEndpoint(new URL('https://sef:p%40ss@am.example:9093/prefix/'));
    expect(url.href).toBe('https://am.example:9093/prefix/api/v2/alerts');
    expect(Buffer.from(basicAuth!, 'base64').toString()).toBe('sef:p@ss');
  });

  it('rejects bad label names and reserved labels, and URL credentials together with a bearer token', () => {
    const bad = alertmanagerOptionsSchema.safeParse({
      urls: ['http://127.0.0.1:9093'],
      labels: { 'team-name': 'x', vm: 'y' },
    });
    const text = JSON.stringify(bad.error?.issues);
    expect(text).toContain('a label name must match [a-zA-Z_][a-zA-Z0-9_]*');
    expect(text).toContain('the sink sets alertname, event_id');
    const both = alertmanagerOptionsSchema.safeParse({
      urls: ['https://u:secretpass@am.example'],
      bearerToken: 'tok',
    });
    expect(JSON.stringify(both.error?.issues)).toContain(
      'carries basic-auth credentials and bearerToken is set',
    );
    expect(JSON.stringify(both.error?.issues)).not.toContain('secretpass');
  });

  it('warns about a URL that already ends in /api/v2/alerts and about credentials over plain http', () => {
    const options = alertmanagerOptionsSchema.parse({
      urls: ['http://am.example:9093/api/v2/alerts', 'http://sef:hunter22@am2.example:9093'],
    });
    const warnings = alertmanagerSinkFactory.warnings!('am', options);
    expect(warnings).toEqual([
      expect.stringContaining('urls[0] (inline) already ends in /api/v2/alerts'),
      expect.stringContaining('urls[1] (inline) sends basic-auth credentials over plain http://'),
    ]);
    expect(warnings.join('')).not.toContain('hunter22');
  });
});

describe('delivery to two Alertmanager doubles', () => {
  let a: AlertmanagerDouble;
  let b: AlertmanagerDouble;
  const sinks: Sink[] = [];
  beforeAll(async () => {
    [a, b] = await Promise.all([AlertmanagerDouble.start(), AlertmanagerDouble.start()]);
  });
  afterAll(async () => {
    for (const s of sinks) await s.close?.();
    await Promise.all([a.close(), b.close()]);
  });

  it('sends one batch to every peer, with the bearer token; fire then resolve leaves one resolved alert per event', async () => {
    const options = alertmanagerOptionsSchema.parse({
      urls: [a.baseUrl, b.baseUrl],
      bearerToken: 'am-token-123',
    });
    const sink = createAlertmanagerSink('am', options, context());
    sinks.push(sink);
    await sink.deliver(
      [makeRecord('scheduled'), makeRecord('completed', { time: '2025-09-19T18:40:00.000Z' })],
      signal(),
    );
    for (const double of [a, b]) {
      expect(double.requests.at(-1)!.headers.authorization).toBe('Bearer am-token-123');
      expect(double.alerts()).toHaveLength(1);
      expect(double.alerts()[0]!.endsAt).toBe('2025-09-19T18:40:00.000Z');
    }
  });

  it('a 400 from Alertmanager is permanent with its validation text, failedIndex unset (the engine isolates the record)', async () => {
    const options = alertmanagerOptionsSchema.parse({ urls: [a.baseUrl] });
    const sink = createAlertmanagerSink('am', options, context());
    sinks.push(sink);
    a.fault(() => ({
      status: 400,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify('start time must be before end time'),
    }));
    const error = await sink.deliver([makeRecord('scheduled'), makeRecord('started')], signal()).then(
      () => undefined,
      (e: unknown) => e,
    );
    a.fault(undefined);
    expect(error).toBeInstanceOf(DeliveryError);
    expect(error).toMatchObject({ retryable: false, code: 'http-400', failedIndex: undefined });
    expect((error as DeliveryError).message).toContain(
      'HTTP 400 start time must be before end time (permanent)',
    );
  });
});
