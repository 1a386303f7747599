/**
 * Alert re-sends against two real Alertmanagers (Debian `prometheus-alertmanager`, #31 item 1): the IMDS
 * simulator → a real in-process Forwarder → the alertmanager sink, re-sending every RESEND_S seconds. One
 * Alertmanager is restarted while a Reboot is pending (Alertmanager keeps alerts in memory only, and HA peers do
 * not gossip alerts): it has the alert again by the first re-send after it is ready, the other never loses it,
 * and no record is produced for it. The alert's endsAt is RESEND_S × endsAtIntervals after each send, so every
 * re-send moves it forward; the event's end resolves it on both.
 *
 * "By the first re-send after it is ready" is checked without timing: each re-send's send time is its endsAt
 * minus the endsAt distance, and the re-sends the other Alertmanager took are watched throughout, so the send
 * that brought the alert back must be no later than the first re-send the other one saw after the restart.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.ts';
import { type RunningSimulator, startSimulator } from '../../src/simulator/index.ts';
import { type RunningForwarder, startForwarder } from '../support/forwarder.ts';
import { HttpSinkServer } from '../support/http-sink-server.ts';
import { makeTempDir } from '../support/tmp.ts';
import { waitFor } from '../support/wait.ts';
import {
  type GettableAlert,
  type RunningAlertmanager,
  startAlertmanagerPair,
  webhookRouteConfig,
} from './alertmanager.ts';

const RESEND_S = 2;
const ENDS_AT_INTERVALS = 4;
const ENDS_AT_AFTER_MS = RESEND_S * ENDS_AT_INTERVALS * 1000;

const tmp = makeTempDir('sef-am-resend-');
let receiver: HttpSinkServer;
let am1: RunningAlertmanager;
let am2: RunningAlertmanager;
let sim: RunningSimulator;
let forwarder: RunningForwarder | undefined;

beforeAll(async () => {
  receiver = await HttpSinkServer.start({ status: 200, body: '' });
  [am1, am2] = await startAlertmanagerPair(
    tmp.dir,
    webhookRouteConfig(receiver.url('/alertmanager-webhook')),
  );
  sim = await startSimulator({ timeScale: 0 });
});
afterAll(async () => {
  await forwarder?.stop();
  await sim?.close();
  await am1?.stop();
  await am2?.stop();
  await receiver?.close();
  tmp.cleanup();
});

async function alertOf(am: RunningAlertmanager, eventId: string): Promise<GettableAlert | undefined> {
  return (await am.alerts()).find((a) => a.labels.event_id === eventId);
}

/** When the sink sent the POST an alert was last updated by (its endsAt is ENDS_AT_AFTER_MS after that). */
const sentAt = (alert: GettableAlert) => Date.parse(alert.endsAt) - ENDS_AT_AFTER_MS;

describe('alertmanager re-sends against real Alertmanagers', () => {
  it('a restarted peer has the pending alert again by the first re-send after it is ready; the other never loses it', async () => {
    const { id: eventId } = sim.admin.injectEvent({ type: 'Reboot', noticeSeconds: 6 * 3600 });
    const config = loadConfig({
      overrides: {
        stateDir: join(tmp.dir, 'state'),
        imds: { endpoint: sim.url, pollIntervalMs: 200 },
        sinks: [
          {
            name: 'am',
            type: 'alertmanager',
            urls: [am1.url, am2.url],
            resendIntervalSeconds: RESEND_S,
            endsAtIntervals: ENDS_AT_INTERVALS,
          },
        ],
      },
    });
    forwarder = startForwarder({ config });
    const fired = await waitFor(
      async () =>
        (await alertOf(am1, eventId)) && (await alertOf(am2, eventId)) ? alertOf(am1, eventId) : undefined,
      'the firing alert on both Alertmanagers',
    );
    expect(fired.status.state).toBe('active');
    expect(fired.labels).toMatchObject({
      event_type: 'Reboot',
      severity: 'warning',
      affects_this_vm: 'true',
    });
    expect(fired.labels.subscription).toBeTruthy();
    expect(fired.labels.resource_group).toBeTruthy();

    // Watch every re-send am2 takes (its send time), the whole time.
    const am2Sends = new Set<number>();
    let am2LostIt = false;
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const alert = await alertOf(am2, eventId);
        if (alert === undefined) am2LostIt = true;
        else am2Sends.add(sentAt(alert));
        await new Promise((r) => setTimeout(r, 20));
      }
    })();

    await am1.restart();
    const readyAt = Date.now();
    const back = await waitFor(() => alertOf(am1, eventId), 'the alert on the restarted Alertmanager');
    const firstAfterRestart = await waitFor(
      () => [...am2Sends].filter((t) => t > readyAt).sort((x, y) => x - y)[0],
      'a re-send after the restart at the other Alertmanager',
    );
    // A second re-send after the restart moves endsAt on both, as Prometheus' re-sends do.
    await waitFor(
      () => [...am2Sends].filter((t) => t > firstAfterRestart).length > 0,
      'the next re-send at the other Alertmanager',
    );
    watching = false;
    await watch;

    expect(sentAt(back)).toBeLessThanOrEqual(firstAfterRestart);
    expect(back.labels).toEqual(fired.labels);
    expect(back.status.state).toBe('active');
    expect(am2LostIt).toBe(false);
    expect(forwarder.forwarder.stats.records).toBe(1); // re-sends are not records

    // The event ends: the completed record resolves the alert on both.
    sim.admin.setStatus(eventId, 'Started');
    sim.admin.removeEvent(eventId);
    await waitFor(
      async () => (await alertOf(am1, eventId)) === undefined && (await alertOf(am2, eventId)) === undefined,
      'the resolved alert to leave both active lists',
    );
  });
});
