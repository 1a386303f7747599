import { afterEach, describe, expect, it } from 'vitest';
import {
  type PeriodicSend,
  type PeriodicSendEvent,
  PeriodicSender,
  type PeriodicTrigger,
} from '../../../src/delivery/periodic.ts';
import { captureLogger, permanent, retryable } from '../../support/delivery.ts';
import { FakeClock, settle } from '../../support/fake-clock.ts';

/** A send whose outcome the test scripts; records every call with the clock's time. */
class ScriptedSend implements PeriodicSend {
  readonly kind: string;
  readonly sink: string;
  readonly intervalMs: number;
  readonly atStart: boolean;
  readonly atStop: boolean;
  readonly calls: Array<{ trigger: PeriodicTrigger; at: number; state: number }> = [];
  /** What the "state" is when a send builds its payload. */
  state = 0;
  failWith: Error | undefined;
  /** While set, a send waits for it (in flight), honouring the abort signal. */
  gate: Promise<void> | undefined;
  readonly #clock: FakeClock;

  constructor(
    clock: FakeClock,
    options: Partial<Pick<PeriodicSend, 'atStart' | 'atStop' | 'intervalMs' | 'sink'>> = {},
  ) {
    this.#clock = clock;
    this.kind = 'heartbeat';
    this.sink = options.sink ?? 'hub';
    this.intervalMs = options.intervalMs ?? 1000;
    this.atStart = options.atStart ?? false;
    this.atStop = options.atStop ?? false;
  }

  async send(trigger: PeriodicTrigger, signal: AbortSignal): Promise<void> {
    this.calls.push({ trigger, at: this.#clock.t, state: this.state });
    if (this.gate !== undefined) {
      const gate = this.gate;
      await new Promise<void>((resolve, reject) => {
        if (signal.aborted) reject(signal.reason);
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        void gate.then(resolve);
      });
    }
    if (this.failWith !== undefined) throw this.failWith;
  }
}

let sender: PeriodicSender | undefined;
let clock: FakeClock;

afterEach(async () => {
  if (sender !== undefined) {
    const stopping = sender.stop(0);
    await clock.advance(10);
    await stopping;
  }
  sender = undefined;
});

function start(sends: PeriodicSend[], events: PeriodicSendEvent[] = [], logger = captureLogger().logger) {
  sender = new PeriodicSender({ sends, clock, logger, observer: (e) => events.push(e) });
  sender.start();
  return sender;
}

describe('PeriodicSender', () => {
  it('sends at start, at every interval and once at a clean stop, each built from the state at that moment', async () => {
    clock = new FakeClock();
    const send = new ScriptedSend(clock, { atStart: true, atStop: true, intervalMs: 1000 });
    const events: PeriodicSendEvent[] = [];
    const s = start([send], events);
    await settle();
    send.state = 1;
    await clock.advance(1000);
    send.state = 2;
    await clock.advance(1000);
    send.state = 3;
    const stopping = s.stop(5000);
    await clock.advance(0);
    await stopping;
    sender = undefined;
    expect(send.calls).toEqual([
      { trigger: 'start', at: 0, state: 0 },
      { trigger: 'interval', at: 1000, state: 1 },
      { trigger: 'interval', at: 2000, state: 2 },
      { trigger: 'stop', at: 2000, state: 3 },
    ]);
    expect(events.map((e) => `${e.type}:${e.trigger}`)).toEqual([
      'periodicSent:start',
      'periodicSent:interval',
      'periodicSent:interval',
      'periodicSent:stop',
    ]);
    // Stopped: no timer is left behind.
    expect(clock.pendingTimers).toBe(0);
  });

  it('never retries or queues a failed send: the next interval builds from the newer state (latest wins)', async () => {
    clock = new FakeClock();
    const send = new ScriptedSend(clock, { intervalMs: 1000 });
    const events: PeriodicSendEvent[] = [];
    start([send], events);
    send.failWith = retryable('http-503');
    await clock.advance(1000);
    await clock.advance(999);
    expect(send.calls).toHaveLength(1); // no retry before the next interval
    send.failWith = undefined;
    send.state = 7;
    await clock.advance(1);
    expect(send.calls.map((c) => c.state)).toEqual([0, 7]);
    expect(events.map((e) => e.type)).toEqual(['periodicFailed', 'periodicSent']);
    expect(events[0]).toMatchObject({ code: 'http-503', kind: 'heartbeat', sink: 'hub' });
  });

  it('skips an interval while a send is still in flight (at most one per kind and sink)', async () => {
    clock = new FakeClock();
    const send = new ScriptedSend(clock, { intervalMs: 1000 });
    let open!: () => void;
    send.gate = new Promise((resolve) => {
      open = resolve;
    });
    start([send]);
    await clock.advance(3500); // ticks at 1000 (in flight), 2000 and 3000 (skipped)
    expect(send.calls).toHaveLength(1);
    send.gate = undefined;
    open();
    await settle();
    await clock.advance(500);
    expect(send.calls.map((c) => c.at)).toEqual([1000, 4000]);
  });

  it('logs a failure once per distinct code at warn level, then at debug, and the recovery once at info', async () => {
    clock = new FakeClock();
    const send = new ScriptedSend(clock, { intervalMs: 1000 });
    const capture = captureLogger();
    start([send], [], capture.logger);
    send.failWith = retryable('http-503');
    await clock.advance(3000);
    send.failWith = permanent('http-401');
    await clock.advance(1000);
    send.failWith = undefined;
    await clock.advance(1000);
    const lines = capture
      .lines()
      .map((l) => ({ level: l.level, code: l.code, msg: l.msg, failures: l.failures }));
    expect(lines.filter((l) => l.level === 40).map((l) => l.code)).toEqual(['http-503', 'http-401']);
    expect(lines.filter((l) => l.level === 20).map((l) => l.code)).toEqual(['http-503', 'http-503']);
    expect(lines.filter((l) => l.level === 30)).toEqual([
      expect.objectContaining({ failures: 4, msg: 'heartbeat reached sink hub again after 4 failed sends' }),
    ]);
    for (const line of capture.lines())
      expect(line).toMatchObject({ component: 'periodic', kind: 'heartbeat', sink: 'hub' });
  });

  it('aborts a send in flight at stop, then makes the stop-send within the deadline', async () => {
    clock = new FakeClock();
    const send = new ScriptedSend(clock, { intervalMs: 1000, atStop: true });
    send.gate = new Promise(() => {}); // never answers
    const events: PeriodicSendEvent[] = [];
    const s = start([send], events);
    await clock.advance(1000);
    const stopping = s.stop(2000);
    await settle();
    // The aborted interval send is not reported as a failure; the stop-send is in flight now.
    expect(send.calls.map((c) => c.trigger)).toEqual(['interval', 'stop']);
    await clock.advance(2000);
    await stopping;
    sender = undefined;
    expect(events).toEqual([expect.objectContaining({ type: 'periodicFailed', trigger: 'stop' })]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('sendNow sends at once (coalesced with one in flight); nothing is sent before start or after stop', async () => {
    clock = new FakeClock();
    const send = new ScriptedSend(clock, { intervalMs: 60_000 });
    const s = new PeriodicSender({ sends: [send], clock, logger: captureLogger().logger });
    s.sendNow();
    expect(send.calls).toHaveLength(0);
    sender = s;
    s.start();
    s.sendNow('other-kind');
    s.sendNow('heartbeat');
    s.sendNow();
    await settle();
    expect(send.calls.map((c) => c.trigger)).toEqual(['interval']);
    const stopping = s.stop(0);
    await clock.advance(0);
    await stopping;
    sender = undefined;
    s.sendNow();
    await settle();
    expect(send.calls).toHaveLength(1);
  });
});

describe('PeriodicSender add and remove (a reload adds, removes or rebuilds a sink)', () => {
  it('an added send starts at once (its start send included); a removed one stops and is aborted in flight', async () => {
    clock = new FakeClock();
    const first = new ScriptedSend(clock, { intervalMs: 1000 });
    const s = start([first]);
    await clock.advance(1000);
    const added = new ScriptedSend(clock, { intervalMs: 1000, atStart: true, atStop: true, sink: 'added' });
    s.add([added]);
    await settle();
    expect(added.calls.map((c) => c.trigger)).toEqual(['start']);
    added.gate = new Promise(() => {}); // the next send hangs
    await clock.advance(1000);
    expect(added.calls).toHaveLength(2);
    await s.remove('added'); // aborts the hanging send and resolves once it ended
    await clock.advance(3000);
    expect(added.calls).toHaveLength(2);
    expect(first.calls).toHaveLength(5);
    const stopping = s.stop(1000);
    await clock.advance(0);
    await stopping;
    sender = undefined;
    // No stop-send for the removed sink.
    expect(added.calls.map((c) => c.trigger)).toEqual(['start', 'interval']);
  });

  it('sends added before start start with it; nothing is added once stopping', async () => {
    clock = new FakeClock();
    const s = new PeriodicSender({ sends: [], clock, logger: captureLogger().logger });
    sender = s;
    const early = new ScriptedSend(clock, { intervalMs: 1000, atStart: true });
    s.add([early]);
    await settle();
    expect(early.calls).toHaveLength(0);
    s.start();
    await settle();
    expect(early.calls.map((c) => c.trigger)).toEqual(['start']);
    const stopping = s.stop(0);
    await clock.advance(0);
    await stopping;
    sender = undefined;
    const late = new ScriptedSend(clock, { intervalMs: 1000, atStart: true });
    s.add([late]);
    await clock.advance(5000);
    expect(late.calls).toHaveLength(0);
  });
});
