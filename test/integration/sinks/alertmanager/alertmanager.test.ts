/**
 * The alertmanager sink in the npm test tier: the pure mapping (the fixed label set, identical between fire and
 * resolve; severity by event type; the portal link as generatorURL; endsAt a few resend intervals after each
 * send), how the outcomes of several Alertmanagers combine (acknowledgeWhen), configuration checks and warnings,
 * and delivery and re-sends to two local doubles of Alertmanager's /api/v2/alerts
 * (test/support/alertmanager-double.ts). The real Alertmanager: test/observability/alertmanager.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../../../src/clock.ts';
import { redactText } from '../../../../src/redact.ts';
import {
  ALERTMANAGER_DEFAULT_FILTER,
  type AlertMapping,
  alertLabels,
  alertmanagerOptionsSchema,
  alertmanagerSinkFactory,
  alertsEndpoint,
  alertTimes,
  combinePeerOutcomes,
  createAlertmanagerSink,
  RESERVED_LABELS,
  toAlert,
} from '../../../../src/sinks/alertmanager/index.ts';
import { httpStatusError, networkError } from '../../../../src/sinks/delivery-errors.ts';
import { portalUrl } from '../../../../src/sinks/format.ts';
import { DeliveryError, type Sink } from '../../../../src/sinks/types.ts';
import { AlertmanagerDouble, labelKey } from '../../../support/alertmanager-double.ts';
import { capturingLogger } from '../../../support/logs.ts';
import { makeRecord } from '../../../support/records.ts';
import { context, signal } from '../../../support/sink-tests.ts';

const MINUTE = 60_000;
const mapping: AlertMapping = {
  alertname: 'AzureScheduledEvent',
  labels: { team: 'ops' },
  severityByEventType: {},
  endsAtAfterMs: 4 * MINUTE,
};

describe('alert mapping', () => {
  it('every transition of one event carries the same, fixed label set; only completed and canceled resolve', () => {
    const transitions = ['scheduled', 'updated', 'approved', 'started', 'completed', 'canceled'] as const;
    const labels = transitions.map((t) => alertLabels(makeRecord(t), mapping));
    for (const l of labels) expect(l).toEqual(labels[0]);
    expect(labels[0]).toEqual({
      alertname: 'AzureScheduledEvent',
      event_id: '3DA1B9AA-1111-2222-3333-444455556666',
      event_type: 'Reboot',
      severity: 'warning',
      vm: 'vm-web-01',
      subscription: '11111111-2222-3333-4444-555555555555',
      resource_group: 'rg-web-prod',
      zone: '2',
      location: 'westeurope',
      affects_this_vm: 'true',
      team: 'ops',
    });
    // scale_set is empty for this VM (left out, as Alertmanager drops empty labels); the rest is the fixed set
    expect(Object.keys(labels[0]!).sort()).toEqual(
      [...RESERVED_LABELS.filter((l) => l !== 'scale_set'), 'team'].sort(),
    );
    const seen = Date.parse('2025-09-19T18:14:47.123Z');
    for (const t of ['completed', 'canceled'] as const) {
      expect(alertTimes(makeRecord(t), seen + 3 * MINUTE, 4 * MINUTE).endsAt).toBe(seen);
    }
  });

  it('severity comes from the event type, configurable per type, the same when the alert resolves', () => {
    const of = (type: string, map: Record<string, string> = {}) =>
      ['scheduled', 'completed'].map(
        (t) =>
          alertLabels(makeRecord(t as 'scheduled' | 'completed', { eventType: type }), {
            ...mapping,
            severityByEventType: map,
          }).severity,
      );
    expect(of('Terminate')).toEqual(['critical', 'critical']);
    expect(of('Preempt')).toEqual(['critical', 'critical']);
    expect(of('Redeploy')).toEqual(['warning', 'warning']);
    expect(of('Freeze')).toEqual(['info', 'info']);
    expect(of('Freeze', { Freeze: 'page', Reboot: 'critical' })).toEqual(['page', 'page']);
    expect(of('Reboot', { Freeze: 'page', Reboot: 'critical' })).toEqual(['critical', 'critical']);
  });

  it('a firing alert ends endsAtAfterMs after it is sent, whatever NotBefore says; startsAt is the first sighting', () => {
    const scheduled = makeRecord('scheduled', { durationInSeconds: 600 });
    const sentAt = Date.parse(scheduled.time) + 90 * MINUTE; // sent late (a retried delivery, a re-send)
    expect(alertTimes(scheduled, sentAt, 4 * MINUTE)).toEqual({
      startsAt: Date.parse(scheduled.time),
      endsAt: sentAt + 4 * MINUTE,
    });
    const started = makeRecord('started');
    expect(alertTimes(started, sentAt, 4 * MINUTE).endsAt).toBe(sentAt + 4 * MINUTE);
    const alert = toAlert(scheduled, mapping, sentAt);
    expect(alert.endsAt).toBe(new Date(sentAt + 4 * MINUTE).toISOString());
    expect(alert.annotations).toMatchObject({
      event_status: 'Scheduled',
      duration_in_seconds: '600',
      transition: 'scheduled',
    });
  });

  it("generatorURL is the VM's portal link (the one Slack and Teams show) unless one is configured", () => {
    const record = makeRecord('scheduled');
    expect(toAlert(record, mapping, 0).generatorURL).toBe(portalUrl(record));
    expect(portalUrl(record)).toMatch(/^https:\/\/portal\.azure\.com\/.*\/virtualMachines\/vm-web-01$/);
    const configured = toAlert(record, { ...mapping, generatorUrl: 'https://runbooks.example/azure' }, 0);
    expect(configured.generatorURL).toBe('https://runbooks.example/azure');
    const unknownVm = makeRecord('scheduled', { vm: undefined });
    expect(toAlert(unknownVm, mapping, 0)).not.toHaveProperty('generatorURL');
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

  it('sorts the combined refusal into the two classes of permanent failure', () => {
    const unauthorized = httpStatusError('peer refuses the credentials', 401, {
      retryable: false,
      scope: 'destination',
    });
    // any: a peer that refuses as a destination could take the alert once fixed: pause, keep the record
    expect(combinePeerOutcomes([rejected, unauthorized], 'any', where)).toMatchObject({
      scope: 'destination',
      code: 'http-401',
    });
    expect(combinePeerOutcomes([rejected, rejected], 'any', where)?.scope).toBe('record');
    // all: a peer that refuses the record will never take it: dead letter
    expect(combinePeerOutcomes([rejected, unauthorized], 'all', where)).toMatchObject({
      scope: 'record',
      code: 'http-400',
    });
    expect(combinePeerOutcomes([busy, unauthorized], 'all', where)?.scope).toBe('destination');
  });
});

describe('configuration', () => {
  it('turns URL credentials into a Basic Authorization header and appends the alerts path', () => {
    const { url, basicAuth } = alertsEndpoint(new URL('https://sef:p%40ss@am.example:9093/prefix/'));
    expect(url.href).toBe('https://am.example:9093/prefix/api/v2/alerts');
    expect(Buffer.from(basicAuth!, 'base64').toString()).toBe('sef:p@ss');
  });

  it('rejects bad label names and reserved labels, and URL credentials together with a bearer token', () => {
    const bad = alertmanagerOptionsSchema().safeParse({
      urls: ['http://127.0.0.1:9093'],
      labels: { 'team-name': 'x', vm: 'y' },
    });
    const text = JSON.stringify(bad.error?.issues);
    expect(text).toContain('a label name must match [a-zA-Z_][a-zA-Z0-9_]*');
    expect(text).toContain('the sink sets alertname, event_id');
    const both = alertmanagerOptionsSchema().safeParse({
      urls: ['https://u:secretpass@am.example'],
      bearerToken: 'tok',
    });
    expect(JSON.stringify(both.error?.issues)).toContain(
      'carries basic-auth credentials and bearerToken is set',
    );
    expect(JSON.stringify(both.error?.issues)).not.toContain('secretpass');
  });

  it("defaults to this VM's events, a re-send every minute and endsAt four intervals ahead; the sink's labels are reserved", () => {
    expect(alertmanagerSinkFactory.defaultFilter).toBe(ALERTMANAGER_DEFAULT_FILTER);
    expect(ALERTMANAGER_DEFAULT_FILTER).toEqual({ scope: 'this-vm' });
    const options = alertmanagerOptionsSchema().parse({ urls: ['http://127.0.0.1:9093'] });
    expect(options).toMatchObject({ resendIntervalSeconds: 60, endsAtIntervals: 4, severityByEventType: {} });
    const sink = createAlertmanagerSink('am', options, context());
    expect(sink.refreshPending?.intervalMs).toBe(60_000);
    for (const label of ['severity', 'subscription', 'resource_group']) {
      const parsed = alertmanagerOptionsSchema().safeParse({
        urls: ['http://x:9093'],
        labels: { [label]: 'x' },
      });
      expect(JSON.stringify(parsed.error?.issues)).toContain('choose another label name');
    }
    expect(
      alertmanagerOptionsSchema().safeParse({ urls: ['http://x:9093'], endsAtMarginSeconds: 3600 }).success,
    ).toBe(false);
  });

  it('warns about a URL that already ends in /api/v2/alerts and about credentials over plain http', () => {
    const options = alertmanagerOptionsSchema().parse({
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

describe('naming a peer in logs and errors', () => {
  it('names a failed peer by its index and host; only the credentials of a URL are redacted, never the host (issue 31 item 6)', async () => {
    const password = 'Am-Basic-Passw0rd-4711';
    const authed = await AlertmanagerDouble.start({ user: 'sef', password });
    const gone = await AlertmanagerDouble.start();
    const goneUrl = gone.baseUrl; // http://127.0.0.1:<port>: no credentials at all
    await gone.close(); // a peer that is down: connection refused
    const { logger, output } = capturingLogger();
    const raw = { urls: [authed.baseUrl.replace('http://', `http://sef:${password}@`), goneUrl] };
    const sink = createAlertmanagerSink('am', alertmanagerOptionsSchema().parse(raw), context(logger));
    try {
      await sink.deliver([makeRecord('scheduled')], signal()); // acknowledgeWhen any: the first peer took it
      expect(authed.alerts()).toHaveLength(1);
      const [warning] = output()
        .split('\n')
        .filter((l) => l.includes('alertmanager peer failed'));
      expect(warning).toContain(`sink am urls[1] (${goneUrl}): network error ECONNREFUSED`);
      expect(output()).not.toContain('([redacted])');
      const all = await sink.deliver([makeRecord('started')], signal()).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(all).toBeUndefined();
      const strict = createAlertmanagerSink(
        'am-all',
        alertmanagerOptionsSchema().parse({ ...raw, acknowledgeWhen: 'all' }),
        context(logger),
      );
      const error = (await strict.deliver([makeRecord('started')], signal()).then(
        () => undefined,
        (e: unknown) => e,
      )) as DeliveryError;
      await strict.close?.();
      expect(error.message).toContain(`urls[1] (${goneUrl})`);
      expect(redactText(error.message)).toBe(error.message); // nothing in it is a secret
      for (const text of [output(), error.message]) expect(text).not.toContain(password);
      // The password of urls[0] is redacted wherever it appears, the host beside it is not.
      expect(redactText(`http://sef:${password}@${new URL(authed.baseUrl).host}`)).toBe(
        `http://[redacted]@${new URL(authed.baseUrl).host}`,
      );
    } finally {
      await sink.close?.();
      await authed.close();
    }
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
    const options = alertmanagerOptionsSchema().parse({
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

  it('re-sends the firing alert of every pending event (read when it is sent) to every peer, in batches; nothing when none is pending', async () => {
    const sentAt = Date.parse('2026-03-01T10:00:00Z');
    const options = alertmanagerOptionsSchema().parse({
      urls: [a.baseUrl, b.baseUrl],
      maxBatch: 2,
      resendIntervalSeconds: 30,
    });
    const sink = createAlertmanagerSink('am', options, context(), {
      clock: { ...systemClock, now: () => sentAt },
    });
    sinks.push(sink);
    const pending = ['E1', 'E2', 'E3'].map((eventId) => makeRecord('scheduled', { eventId }));
    a.restart();
    b.restart();
    const before = a.requests.length;
    await sink.refreshPending!.send(() => [], signal());
    expect(a.requests.length).toBe(before); // nothing pending: no request at all
    await sink.refreshPending!.send(() => pending, signal());
    for (const double of [a, b]) {
      expect(double.requests.length - (double === a ? before : 0)).toBeGreaterThanOrEqual(2);
      const alerts = double.active(sentAt);
      expect(alerts.map((x) => x.labels.event_id).sort()).toEqual(['E1', 'E2', 'E3']);
      for (const alert of alerts) expect(alert.endsAt).toBe(new Date(sentAt + 4 * 30_000).toISOString());
    }
    expect(a.requests.slice(before).map((r) => (JSON.parse(r.body) as unknown[]).length)).toEqual([2, 1]);
    // the re-sent alert is the one the outbox record fired: same labels, same identity
    expect(labelKey(a.alerts()[0]!.labels)).toBe(
      labelKey(toAlert(pending[0]!, { ...mapping, labels: {} }, 0).labels),
    );
  });

  it('deliveries and re-sends take turns: a resolve committed while a re-send is in flight reaches Alertmanager after it', async () => {
    const options = alertmanagerOptionsSchema().parse({ urls: [a.baseUrl] });
    const sink = createAlertmanagerSink('am', options, context());
    sinks.push(sink);
    const eventId = 'E-RESOLVE-ORDER';
    const now = new Date().toISOString();
    const fired = makeRecord('scheduled', { eventId, time: now });
    const completed = makeRecord('completed', { eventId, time: now });
    let resendAnswered = false;
    const arrivals: Array<{ what: string; resendAnswered: boolean }> = [];
    a.fault((request) => {
      const what = request.body.includes('"transition":"completed"') ? 'resolve' : 'fire';
      arrivals.push({ what, resendAnswered });
      return undefined;
    });
    a.delayAnswers(300); // the re-send's answer is slow
    const resending = sink
      .refreshPending!.send(() => [fired], signal())
      .then(() => {
        resendAnswered = true;
      });
    const delivering = sink.deliver([completed], signal()); // the event ended meanwhile
    await Promise.all([resending, delivering]);
    a.fault(undefined);
    a.delayAnswers(0);
    expect(arrivals).toEqual([
      { what: 'fire', resendAnswered: false },
      { what: 'resolve', resendAnswered: true },
    ]);
    expect(a.active().filter((x) => x.labels.event_id === eventId)).toEqual([]);
  });

  it('a re-send that comes after a delivery reads what is pending when its turn comes', async () => {
    const options = alertmanagerOptionsSchema().parse({ urls: [a.baseUrl] });
    const sink = createAlertmanagerSink('am', options, context());
    sinks.push(sink);
    const eventId = 'E-READ-IN-TURN';
    const now = new Date().toISOString();
    let pending = [makeRecord('scheduled', { eventId, time: now })];
    a.delayAnswers(300);
    const before = a.requests.length;
    const delivering = sink.deliver([makeRecord('completed', { eventId, time: now })], signal());
    const resending = sink.refreshPending!.send(() => pending, signal());
    pending = []; // the commit that ended the event came before the re-send's turn
    await Promise.all([delivering, resending]);
    a.delayAnswers(0);
    expect(a.requests.length).toBe(before + 1); // only the resolve went out
    expect(a.requests.at(-1)!.body).toContain('"transition":"completed"');
    expect(a.active().filter((x) => x.labels.event_id === eventId)).toEqual([]);
  });

  it('a 400 from Alertmanager is permanent with its validation text, failedIndex unset (the engine isolates the record)', async () => {
    const options = alertmanagerOptionsSchema().parse({ urls: [a.baseUrl] });
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
      'HTTP 400 start time must be before end time (permanent for this record)',
    );
  });
});
