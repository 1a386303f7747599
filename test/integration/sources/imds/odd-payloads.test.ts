/**
 * Odd IMDS payloads over real HTTP from the simulator (faults `bom` and `raw-body`): a UTF-8 byte order mark
 * before valid JSON is accepted; absurdly deep nesting is a malformed answer (not a `network` failure from a
 * stack overflow); bytes that are not UTF-8 are a failed poll — the same garbled bytes never become an
 * `updated` record (docs/sources.md, "Tolerant parsing").
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { PollOutcome } from '../../../../src/domain/index.ts';
import { silentLogger } from '../../../../src/log.ts';
import { type RunningSimulator, startSimulator } from '../../../../src/simulator/index.ts';
import { ImdsClient, ImdsPoller } from '../../../../src/sources/imds/index.ts';
import { initialState, transform } from '../../../../src/transform/index.ts';
import { waitFor } from '../../../support/wait.ts';

let sim: RunningSimulator | undefined;
let client: ImdsClient | undefined;
afterEach(async () => {
  client?.close();
  client = undefined;
  await sim?.close();
  sim = undefined;
});

const DESCRIPTION = 'Maintenance on the host — café';

async function simulatorWithEvent(): Promise<{ sim: RunningSimulator; client: ImdsClient }> {
  sim = await startSimulator({ timeScale: 0 });
  sim.admin.injectEvent({
    id: 'A1B2C3D4-0000-4000-8000-00000000000A',
    type: 'Reboot',
    description: DESCRIPTION,
  });
  client = new ImdsClient({ endpoint: sim.url, requestTimeoutMs: 5000, firstRequestTimeoutMs: 5000 });
  return { sim, client };
}

/** The current document's JSON text with a different tail for the first event (raw bytes, base64). */
function rawDocument(current: string, mutate: (json: string) => Buffer): string {
  return mutate(current).toString('base64');
}

/** Runs a real poller (200 ms interval) until `done(outcomes)`, then stops it. */
async function poll(imds: ImdsClient, done: (outcomes: PollOutcome[]) => boolean): Promise<PollOutcome[]> {
  const outcomes: PollOutcome[] = [];
  const controller = new AbortController();
  const poller = new ImdsPoller({ client: imds, intervalMs: 200, logger: silentLogger() });
  const running = poller.start(controller.signal, (o) => {
    outcomes.push(o);
  });
  try {
    await waitFor(() => done(outcomes), 'the expected poll outcomes', { timeoutMs: 30_000 });
  } finally {
    controller.abort();
    await running;
  }
  return outcomes;
}

function currentBody(running: RunningSimulator): string {
  return JSON.stringify(running.admin.document());
}

describe('odd IMDS payloads (simulator, real HTTP)', () => {
  it('accepts a UTF-8 byte order mark before valid JSON', async () => {
    const { sim, client } = await simulatorWithEvent();
    const plain = await client.getScheduledEvents();
    sim.admin.addFault({ kind: 'bom', endpoint: 'scheduledevents' });
    const withBom = await client.getScheduledEvents();
    expect(withBom.document).toEqual(plain.document);
    expect(withBom.document.Events[0]!.Description).toBe(DESCRIPTION);
    expect(sim.admin.requests().log.at(-1)!.faults).toEqual(['bom']);
  });

  it('reports depth-100,000 nesting inside an event field as a malformed answer, not a network failure', async () => {
    const { sim, client } = await simulatorWithEvent();
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    const body = rawDocument(currentBody(sim), (json) =>
      Buffer.from(json.replace('"EventId":', `"Nested":${deep},"EventId":`), 'utf8'),
    );
    // The first poll sees the good document (so the poller has something to compare with), then 3 deep ones.
    let injected = false;
    const outcomes = await poll(client, (seen) => {
      if (seen.length >= 1 && !injected) {
        injected = true;
        sim.admin.addFault({ kind: 'raw-body', bodyBase64: body, count: 3 });
      }
      return seen.filter((o) => o.kind === 'failure').length >= 3;
    });
    const failures = outcomes.filter((o) => o.kind === 'failure');
    expect(failures).toHaveLength(3);
    for (const failure of failures) {
      expect(failure).toMatchObject({ reason: 'invalid-response' });
      expect(failure.message).toMatch(/nests JSON deeper than 64 levels/);
      expect(failure.message).not.toMatch(/call stack/);
    }
  });

  it('never turns invalid UTF-8 into an updated record: the garbled polls fail, the last good document stays', async () => {
    const { sim, client } = await simulatorWithEvent();
    // The same document with "café" sent as Latin-1 (0xE9): not UTF-8.
    const body = rawDocument(currentBody(sim), (json) => {
      const [before, after] = json.split('café') as [string, string];
      return Buffer.concat([
        Buffer.from(`${before}caf`, 'utf8'),
        Buffer.from([0xe9]),
        Buffer.from(after, 'utf8'),
      ]);
    });
    let injected = false;
    const outcomes = await poll(client, (seen) => {
      if (seen.length >= 2 && !injected) {
        injected = true;
        sim.admin.addFault({ kind: 'raw-body', bodyBase64: body, count: 3 });
      }
      const firstFailure = seen.findIndex((o) => o.kind === 'failure');
      return firstFailure >= 0 && seen.slice(firstFailure).filter((o) => o.kind === 'document').length >= 2;
    });

    const failures = outcomes.filter((o) => o.kind === 'failure');
    expect(failures).toHaveLength(3);
    for (const failure of failures) {
      expect(failure).toMatchObject({ reason: 'invalid-response' });
      expect(failure.message).toMatch(/not valid UTF-8 \(byte \d+ of \d+\)/);
    }
    // After the garbled polls the same document is back: unchanged.
    const documents = outcomes.filter((o) => o.kind === 'document');
    expect(documents.map((d) => d.changed)).toEqual([true, ...documents.slice(1).map(() => false)]);

    // Through the transform: one scheduled record, no updated.
    let state = initialState();
    const transitions: string[] = [];
    for (const outcome of outcomes) {
      const result = transform(state, { outcome, vm: undefined, maxGapMs: 60_000 });
      state = result.state;
      transitions.push(...result.records.map((r) => r.transition));
    }
    expect(transitions).toEqual(['scheduled']);
    expect(state.events[0]!.last.Description).toBe(DESCRIPTION);
  });

  it('rejects an unpaired surrogate escape (valid JSON, not Unicode text) as malformed', async () => {
    const { sim, client } = await simulatorWithEvent();
    const body = rawDocument(currentBody(sim), (json) =>
      Buffer.from(json.replace('café', 'caf\\ud800'), 'utf8'),
    );
    sim.admin.addFault({ kind: 'raw-body', bodyBase64: body, count: 1 });
    await expect(client.getScheduledEvents()).rejects.toMatchObject({
      reason: 'invalid-response',
      message: expect.stringMatching(/unpaired UTF-16 surrogate/),
    });
    expect((await client.getScheduledEvents()).document.Events[0]!.Description).toBe(DESCRIPTION);
  });
});
