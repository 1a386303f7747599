import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { PollOutcome } from '../../../../src/domain/index.ts';
import { ImdsPoller } from '../../../../src/sources/imds/poller.ts';
import { ImdsError } from '../../../../src/sources/imds-protocol/errors.ts';
import { ReplaySource } from '../../../../src/sources/replay/source.ts';
import { FakeClock } from '../../../support/fake-clock.ts';
import { LIVE_MIGRATION } from '../../../support/imds-payloads.ts';
import { type Answer, ScriptedClient } from '../../../support/scripted-imds-client.ts';
import { makeTempDir } from '../../../support/tmp.ts';
import { waitFor } from '../../../support/wait.ts';

const silent = pino({ level: 'silent' });
let cleanup: (() => void) | undefined;
afterEach(() => cleanup?.());

function tempFile(name: string): string {
  const tmp = makeTempDir('sef-replay-');
  cleanup = tmp.cleanup;
  return join(tmp.dir, name);
}

/** Run a source to completion (or until `count` outcomes, then abort), driving the fake clock. */
async function collect(
  clock: FakeClock,
  start: (signal: AbortSignal, on: (o: PollOutcome) => void) => Promise<void>,
  count = Number.POSITIVE_INFINITY,
): Promise<{ outcomes: PollOutcome[]; arrivedAt: number[] }> {
  const outcomes: PollOutcome[] = [];
  const arrivedAt: number[] = [];
  const controller = new AbortController();
  let finished = false;
  const done = start(controller.signal, (o) => {
    outcomes.push(o);
    arrivedAt.push(clock.monotonic());
    if (outcomes.length >= count) controller.abort();
  }).finally(() => {
    finished = true;
  });
  await clock.runUntil(() => finished);
  await done;
  return { outcomes, arrivedAt };
}

describe('capture (--record) and replay round trip', () => {
  it('records every distinct document and the failure state changes, and replays them identically', async () => {
    const file = tempFile('capture.jsonl');
    const clock = new FakeClock();
    const [d1, d2, d3, d4] = LIVE_MIGRATION;
    const fail = new ImdsError('server-error', 'IMDS server error 503', { httpStatus: 503 });
    const script: Answer[] = [
      { body: d1 },
      { body: d1 },
      { body: d2 },
      { error: fail },
      { error: fail },
      { body: d2 },
      { body: d3 },
      { body: d3 },
      { body: d4 },
    ];
    const client = new ScriptedClient(clock, (call) => script[call] ?? { body: d4 });
    const poller = new ImdsPoller({ client, clock, captureFile: file, random: () => 0, logger: silent });
    const live = await collect(clock, (s, on) => poller.start(s, on), script.length);

    const lines = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => (l.document ? l.document.DocumentIncarnation : l.failure.reason))).toEqual([
      1,
      2,
      'server-error',
      3,
      4,
    ]);
    expect(lines[1].document).toEqual(JSON.parse(d2)); // raw IMDS JSON, not the normalised form
    expect(lines[2]).toEqual({
      observedAt: new Date(clock.wallStart + 3000).toISOString(),
      failure: { reason: 'server-error', message: 'IMDS server error 503' },
    });

    const replayClock = new FakeClock(Date.parse('2030-01-01T00:00:00Z'));
    const replay = new ReplaySource({ file, speed: 0, clock: replayClock, logger: silent });
    const replayed = await collect(replayClock, (s, on) => replay.start(s, on));
    const liveChanged = live.outcomes.filter((o) => o.kind === 'document' && o.changed);
    const replayedDocs = replayed.outcomes.filter((o) => o.kind === 'document');
    // The same documents at the same times; a replay makes no request, so it has no request duration.
    expect(replayedDocs).toEqual(
      liveChanged.map(({ requestMs: _request, ...o }) => ({
        ...o,
        observed: { ...o.observed, monotonicMs: o.observed.wallMs },
      })),
    );
    const replayedFailure = replayed.outcomes[2]!;
    expect(replayedFailure).toMatchObject({
      kind: 'failure',
      reason: 'server-error',
      consecutiveFailures: 1,
      observed: { wallMs: clock.wallStart + 3000 },
    });
  });

  it('replays at real-time speed (and faster) on the clock, using the captured gaps', async () => {
    const file = tempFile('timed.jsonl');
    const t0 = Date.parse('2022-04-11T22:11:58Z');
    const entries = [0, 5000, 65_000].map((offset, i) =>
      JSON.stringify({
        observedAt: new Date(t0 + offset).toISOString(),
        document: JSON.parse(LIVE_MIGRATION[i]!),
      }),
    );
    writeFileSync(file, `${entries.join('\n')}\n`);
    for (const [speed, expected] of [
      [1, [0, 5000, 65_000]],
      [10, [0, 500, 6500]],
    ] as const) {
      const clock = new FakeClock();
      const replay = new ReplaySource({ file, speed, clock, logger: silent });
      const { outcomes, arrivedAt } = await collect(clock, (s, on) => replay.start(s, on));
      expect(arrivedAt).toEqual(expected);
      expect(outcomes.map((o) => o.observed.wallMs)).toEqual([t0, t0 + 5000, t0 + 65_000]);
    }
  });

  it('reports bad lines as failure outcomes naming the line number, and keeps going', async () => {
    const file = tempFile('bad.jsonl');
    const at = '2022-04-11T22:11:58.000Z';
    writeFileSync(
      file,
      [
        JSON.stringify({ observedAt: at, document: JSON.parse(LIVE_MIGRATION[1]) }),
        '{not json',
        '',
        JSON.stringify({ observedAt: 'yesterday', document: {} }),
        JSON.stringify({ observedAt: at, document: { DocumentIncarnation: 3, Events: 'none' } }),
        JSON.stringify({ observedAt: at, failure: { reason: 'gremlins', message: 'x' } }),
        JSON.stringify({ observedAt: at, something: 1 }),
        `${JSON.stringify({ observedAt: at, document: JSON.parse(LIVE_MIGRATION[2]) })}\r`,
      ].join('\n'),
    );
    const clock = new FakeClock();
    const replay = new ReplaySource({ file, speed: 0, clock, logger: silent });
    const { outcomes } = await collect(clock, (s, on) => replay.start(s, on));
    expect(outcomes.map((o) => o.kind)).toEqual([
      'document',
      'failure',
      'failure',
      'failure',
      'failure',
      'failure',
      'document',
    ]);
    const messages = outcomes.flatMap((o) => (o.kind === 'failure' ? [o.message] : []));
    expect(messages).toEqual([
      expect.stringMatching(/line 2: not valid JSON/),
      expect.stringMatching(/line 4: missing or invalid "observedAt"/),
      expect.stringMatching(/line 5: invalid document: IMDS document Events is not an array/),
      expect.stringMatching(/line 6: unknown failure reason "gremlins"/),
      expect.stringMatching(/line 7: has neither "document" nor "failure"/),
    ]);
    expect(messages.every((m) => m.includes(file))).toBe(true);
    expect(outcomes.map((o) => (o.kind === 'failure' ? o.consecutiveFailures : 0))).toEqual([
      0, 1, 2, 3, 4, 5, 0,
    ]);
    expect(outcomes.every((o) => o.observed.wallMs === Date.parse(at))).toBe(true);
  });

  it('fails clearly when the capture file does not exist', async () => {
    const file = tempFile('missing.jsonl');
    const replay = new ReplaySource({ file, logger: silent });
    await expect(replay.start(new AbortController().signal, () => {})).rejects.toThrow(
      /replay capture file .*missing\.jsonl cannot be read/,
    );
  });

  it('stops when aborted while waiting for the next captured time', async () => {
    const file = tempFile('abort.jsonl');
    const t0 = Date.parse('2022-04-11T22:11:58Z');
    writeFileSync(
      file,
      [0, 600_000]
        .map((o) =>
          JSON.stringify({
            observedAt: new Date(t0 + o).toISOString(),
            document: { DocumentIncarnation: 1, Events: [] },
          }),
        )
        .join('\n'),
    );
    const clock = new FakeClock();
    const replay = new ReplaySource({ file, clock, logger: silent });
    const controller = new AbortController();
    const outcomes: PollOutcome[] = [];
    const done = replay.start(controller.signal, (o) => {
      outcomes.push(o);
    });
    await waitFor(() => clock.pendingTimers > 0, 'the replay to wait for the second captured time');
    controller.abort();
    await done;
    expect(outcomes).toHaveLength(1);
    expect(clock.pendingTimers).toBe(0);
  });
});
