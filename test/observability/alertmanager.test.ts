/**
 * The alertmanager sink against real Alertmanagers (Debian package `prometheus-alertmanager`) on 127.0.0.1:
 * a scheduled record fires an alert with the sink's labels (the fixed set: severity, subscription, resource
 * group, ...), the VM's portal link as generatorURL and an endsAt four resend intervals after the send (re-sends
 * from the forwarder state: alertmanager-resend.test.ts), the completed record
 * resolves it (it leaves GET /api/v2/alerts); a webhook receiver configured in Alertmanager gets the routed
 * firing notification and, with send_resolved, the resolved one; two Alertmanagers (HA) both receive every
 * batch, and with one stopped `acknowledgeWhen: any` still delivers (the failed peer logged) while `all` fails
 * retryably.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LifecycleRecord } from '../../src/domain/index.ts';
import { alertmanagerOptionsSchema, createAlertmanagerSink } from '../../src/sinks/alertmanager/index.ts';
import { portalUrl } from '../../src/sinks/format.ts';
import { DeliveryError, type Sink } from '../../src/sinks/types.ts';
import { HttpSinkServer } from '../support/http-sink-server.ts';
import { makeRecord } from '../support/records.ts';
import { capturingLogger, context, signal } from '../support/sink-tests.ts';
import { makeTempDir } from '../support/tmp.ts';
import { waitFor } from '../support/wait.ts';
import { type RunningAlertmanager, startAlertmanagerPair, webhookRouteConfig } from './alertmanager.ts';

const tmp = makeTempDir('sef-alertmanager-');
let receiver: HttpSinkServer;
let am1: RunningAlertmanager;
let am2: RunningAlertmanager;
const sinks: Sink[] = [];

beforeAll(async () => {
  receiver = await HttpSinkServer.start({ status: 200, body: '' });
  const config = webhookRouteConfig(receiver.url('/alertmanager-webhook'));
  [am1, am2] = await startAlertmanagerPair(tmp.dir, config);
});
afterAll(async () => {
  for (const sink of sinks) await sink.close?.();
  await am1?.stop();
  await am2?.stop();
  await receiver?.close();
  tmp.cleanup();
});

function sinkFor(
  urls: string[],
  extra: Record<string, unknown> = {},
  logger = capturingLogger().logger,
): Sink {
  const options = alertmanagerOptionsSchema().parse({ urls, labels: { team: 'platform' }, ...extra });
  const sink = createAlertmanagerSink('am', options, context(logger));
  sinks.push(sink);
  return sink;
}

/** A record of `transition` for `eventId`, observed now (Alertmanager judges endsAt by its own clock). */
function recordNow(transition: 'scheduled' | 'completed' | 'canceled', eventId: string): LifecycleRecord {
  return makeRecord(transition, { eventId, eventType: 'Reboot', time: new Date().toISOString() });
}

interface WebhookNotification {
  status: 'firing' | 'resolved';
  alerts: Array<{ status: string; labels: Record<string, string>; annotations: Record<string, string> }>;
}

function notifications(eventId: string): WebhookNotification[] {
  return receiver.requests
    .map((r) => JSON.parse(r.body) as WebhookNotification)
    .filter((n) => n.alerts.some((a) => a.labels.event_id === eventId));
}

describe('alertmanager sink against a real Alertmanager', () => {
  it('fires on scheduled (labels, annotations, generatorURL, endsAt four intervals ahead) and resolves on completed; the routed webhook gets both', async () => {
    const eventId = 'A1E27000-0000-4000-8000-000000000001';
    const sink = sinkFor([am1.url]);
    const scheduled = recordNow('scheduled', eventId);
    const before = Date.now();
    await sink.deliver([scheduled], signal());
    const after = Date.now();

    const [alert] = await waitFor(async () => {
      const alerts = (await am1.alerts()).filter((a) => a.labels.event_id === eventId);
      return alerts.length > 0 ? alerts : undefined;
    }, 'the firing alert in Alertmanager');
    expect(alert!.status.state).toBe('active');
    expect(alert!.labels).toEqual({
      alertname: 'AzureScheduledEvent',
      event_id: eventId,
      event_type: 'Reboot',
      severity: 'warning',
      vm: 'vm-web-01',
      subscription: '11111111-2222-3333-4444-555555555555',
      resource_group: 'rg-web-prod',
      zone: '2',
      location: 'westeurope',
      affects_this_vm: 'true',
      team: 'platform',
    });
    expect(alert!.annotations).toMatchObject({
      event_status: 'Scheduled',
      not_before: scheduled.data.notBeforeUtc,
      description: 'Host server is undergoing maintenance.',
      resources: 'vm-web-01',
    });
    // endsAt: 4 × the 60 s resend interval after the POST (Alertmanager keeps millisecond precision)
    expect(Date.parse(alert!.endsAt)).toBeGreaterThanOrEqual(before + 240_000);
    expect(Date.parse(alert!.endsAt)).toBeLessThanOrEqual(after + 240_000);
    expect(alert!.generatorURL).toBe(portalUrl(scheduled));

    const firing = await waitFor(
      () => notifications(eventId).find((n) => n.status === 'firing'),
      'the firing notification at the webhook receiver',
    );
    expect(firing.alerts[0]!.labels).toMatchObject({ event_id: eventId, vm: 'vm-web-01', team: 'platform' });
    expect(firing.alerts[0]!.annotations.summary).toContain(
      'Azure maintenance scheduled: Reboot on vm-web-01',
    );

    await sink.deliver([recordNow('completed', eventId)], signal());
    await waitFor(
      async () => (await am1.alerts()).every((a) => a.labels.event_id !== eventId),
      'the resolved alert to leave the active list',
    );
    const resolved = await waitFor(
      () => notifications(eventId).find((n) => n.status === 'resolved'),
      'the resolved notification (send_resolved) at the webhook receiver',
    );
    expect(resolved.alerts[0]!.labels).toEqual(firing.alerts[0]!.labels);
  });

  it('a canceled event resolves its alert too (the resolved notification follows the firing one)', async () => {
    const eventId = 'A1E27000-0000-4000-8000-000000000002';
    const sink = sinkFor([am1.url]);
    await sink.deliver([recordNow('scheduled', eventId)], signal());
    await waitFor(() => notifications(eventId).find((n) => n.status === 'firing'), 'the firing notification');
    await sink.deliver([recordNow('canceled', eventId)], signal());
    const resolved = await waitFor(
      () => notifications(eventId).find((n) => n.status === 'resolved'),
      'the resolved notification',
    );
    expect(resolved.alerts[0]!.labels.event_id).toBe(eventId);
    expect((await am1.alerts()).filter((a) => a.labels.event_id === eventId)).toEqual([]);
  });

  it('HA: both Alertmanagers receive each batch; with one stopped, "any" delivers (and logs the peer) while "all" retries', async () => {
    const both = sinkFor([am1.url, am2.url]);
    const first = 'A1E27000-0000-4000-8000-000000000003';
    await both.deliver([recordNow('scheduled', first)], signal());
    for (const am of [am1, am2]) {
      expect((await am.alerts()).some((a) => a.labels.event_id === first)).toBe(true);
    }

    await am2.stop();
    const { logger, output } = capturingLogger();
    const any = sinkFor([am1.url, am2.url], { acknowledgeWhen: 'any' }, logger);
    const second = 'A1E27000-0000-4000-8000-000000000004';
    await any.deliver([recordNow('scheduled', second)], signal());
    expect((await am1.alerts()).some((a) => a.labels.event_id === second)).toBe(true);
    // The log names the peer by its index and its host (a base URL without credentials holds no secret).
    expect(output()).toMatch(
      /"code":"network".*alertmanager peer failed: sink am urls\[1\] \(http:\/\/[^)]+\): network error/,
    );
    expect(output()).toContain(`urls[1] (${new URL(am2.url).origin})`);

    const all = sinkFor([am1.url, am2.url], { acknowledgeWhen: 'all' });
    const error = await all.deliver([recordNow('scheduled', second)], signal()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(DeliveryError);
    expect(error).toMatchObject({ retryable: true, code: 'network' });
    expect((error as DeliveryError).message).toContain('1 of 2 Alertmanagers did not accept the alerts');
  });
});
