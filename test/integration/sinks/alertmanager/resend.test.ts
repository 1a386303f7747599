/**
 * Alert re-sends end to end in the npm test tier (#31 item 1): the IMDS simulator → a real in-process Forwarder
 * → the alertmanager sink → two Alertmanager doubles (test/support/alertmanager-double.ts), re-sending every
 * second. An Alertmanager restarted while an event is pending (it loses every alert) has the alert back from a
 * re-send, without a new record; after a forwarder restart the re-sends go on from the committed state (nothing
 * left in the outbox); the event's end resolves the alert on both. The real Alertmanager:
 * test/observability/alertmanager.test.ts.
 */
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../../src/config/index.ts';
import { type RunningSimulator, startSimulator } from '../../../../src/simulator/index.ts';
import { AlertmanagerDouble, labelKey, type StoredAlert } from '../../../support/alertmanager-double.ts';
import { type RunningForwarder, startForwarder } from '../../../support/forwarder.ts';
import { makeTempDir } from '../../../support/tmp.ts';
import { waitFor } from '../../../support/wait.ts';

const tmp = makeTempDir('sef-am-resend-');
const running: RunningForwarder[] = [];
let sim: RunningSimulator | undefined;
let doubles: AlertmanagerDouble[] = [];

afterEach(async () => {
  for (const r of running.splice(0)) await r.stop();
  await sim?.close();
  await Promise.all(doubles.map((d) => d.close()));
  doubles = [];
});
afterAll(() => tmp.cleanup());

function forwarder(stateDir: string, urls: string[]): RunningForwarder {
  const config = loadConfig({
    overrides: {
      stateDir,
      imds: { endpoint: sim!.url, pollIntervalMs: 200 },
      sinks: [{ name: 'am', type: 'alertmanager', urls, resendIntervalSeconds: 1 }],
    },
  });
  const run = startForwarder({ config });
  running.push(run);
  return run;
}

/** The firing alert of `eventId` in `double`, once it has one. */
function firing(double: AlertmanagerDouble, eventId: string): StoredAlert | undefined {
  return double.active().find((a) => a.labels.event_id === eventId);
}

describe('alertmanager re-sends from the forwarder state', () => {
  it('a restarted Alertmanager, and both after a forwarder restart, get the pending alert back; the end resolves it', async () => {
    doubles = await Promise.all([AlertmanagerDouble.start(), AlertmanagerDouble.start()]);
    const [a, b] = doubles as [AlertmanagerDouble, AlertmanagerDouble];
    sim = await startSimulator({ timeScale: 0 });
    const { id: eventId } = sim.admin.injectEvent({ type: 'Reboot', noticeSeconds: 6 * 3600 });
    const stateDir = join(tmp.dir, 'state');
    const first = forwarder(stateDir, [a.baseUrl, b.baseUrl]);

    const fired = await waitFor(
      () => (firing(a, eventId) && firing(b, eventId) ? firing(a, eventId) : undefined),
      'the firing alert on both Alertmanagers',
    );
    expect(fired.labels).toMatchObject({ event_type: 'Reboot', affects_this_vm: 'true' });

    // One Alertmanager restarts: it lost the alert, and gets it back from a re-send (no new record).
    a.restart();
    expect(firing(a, eventId)).toBeUndefined();
    const back = await waitFor(() => firing(a, eventId), 'the re-sent alert on the restarted Alertmanager');
    expect(labelKey(back.labels)).toBe(labelKey(fired.labels));
    expect(first.forwarder.stats.records).toBe(1); // the scheduled record only: re-sends are no records
    expect(first.forwarder.store!.pending('am', 10)).toEqual([]);
    // A re-send moves endsAt forward: the alert stays firing while the event is pending.
    await waitFor(
      () => Date.parse(firing(b, eventId)?.endsAt ?? '') > Date.parse(fired.endsAt),
      'a later endsAt from a re-send',
    );

    // The forwarder restarts (nothing left in its outbox) and both Alertmanagers restart meanwhile.
    await first.stop();
    running.splice(0);
    a.restart();
    b.restart();
    const second = forwarder(stateDir, [a.baseUrl, b.baseUrl]);
    await waitFor(
      () => firing(a, eventId) && firing(b, eventId),
      'the alert on both Alertmanagers again, re-sent after the forwarder restart',
    );
    expect(second.forwarder.stats.records).toBe(0);

    // The event ends: the completed record resolves the alert on both.
    sim.admin.setStatus(eventId, 'Started');
    sim.admin.removeEvent(eventId);
    await waitFor(
      () =>
        a.alerts().some((x) => x.labels.event_id === eventId) && !firing(a, eventId) && !firing(b, eventId),
      'the resolved alert on both Alertmanagers',
    );
    const resolved = a.alerts().find((x) => x.labels.event_id === eventId)!;
    expect(labelKey(resolved.labels)).toBe(labelKey(fired.labels));
  });
});
