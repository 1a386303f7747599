/**
 * The whole forwarder in-process (the same Forwarder class `run` uses) against the IMDS simulator, with hooks
 * that timestamp (performance.now()) when each record is committed and when each sink acknowledged it.
 */
import { validateConfig } from '../../src/config/index.ts';
import type { LifecycleRecord } from '../../src/domain/index.ts';
import { silentLogger } from '../../src/log.ts';
import { Forwarder } from '../../src/pipeline/index.ts';
import type { RunningSimulator } from '../../src/simulator/index.ts';
import { makeTempDir } from '../../test/support/tmp.ts';
import { waitFor } from '../../test/support/wait.ts';

export interface Committed {
  at: number;
  record: LifecycleRecord;
}

export interface InProcessForwarder {
  /** Resolves when a record for `eventId` with `transition` is committed. */
  committed(eventId: string, transition: string): Promise<Committed>;
  /** Resolves with performance.now() when `sink` acknowledged `recordId`. */
  acked(sink: string, recordId: string): Promise<number>;
  stop(): Promise<void>;
}

export interface InProcessOptions {
  endpoint: string;
  pollIntervalMs: number;
  /** Raw sink entries given the state directory (none: records are only committed). */
  entries?: (stateDir: string) => Array<Record<string, unknown>>;
}

/** Starts the forwarder and resolves once it has polled twice (identity known, initial document committed). */
export async function startInProcessForwarder(options: InProcessOptions): Promise<InProcessForwarder> {
  const tmp = makeTempDir('sef-bench-forwarder-');
  const config = validateConfig({
    imds: { endpoint: options.endpoint, pollIntervalMs: options.pollIntervalMs },
    stateDir: tmp.dir,
    log: { level: 'silent' },
    sinks: options.entries?.(tmp.dir) ?? [],
  });
  const commits = new Map<string, Committed>();
  const commitWaiters = new Map<string, (c: Committed) => void>();
  const acks = new Map<string, number>();
  const ackWaiters = new Map<string, (at: number) => void>();
  let outcomes = 0;
  const forwarder: Forwarder = new Forwarder({
    config,
    logger: silentLogger(),
    observer: {
      delivery: (event) => {
        if (event.type !== 'delivered') return;
        const at = performance.now();
        for (const id of event.recordIds) {
          const key = `${event.sink}|${id}`;
          const resolve = ackWaiters.get(key);
          if (resolve === undefined) acks.set(key, at);
          else {
            ackWaiters.delete(key);
            resolve(at);
          }
        }
      },
      outcome: () => {
        outcomes++;
      },
      committed: ({ records }) => {
        const at = performance.now();
        for (const record of records) {
          const key = `${record.data.EventId}|${record.transition}`;
          const resolve = commitWaiters.get(key);
          if (resolve === undefined) commits.set(key, { at, record });
          else {
            commitWaiters.delete(key);
            resolve({ at, record });
          }
        }
      },
    },
  });
  const controller = new AbortController();
  const running = forwarder.run(controller.signal);
  running.catch(() => undefined);
  await Promise.race([
    waitFor(() => outcomes >= 2, 'the in-process forwarder to poll twice', { timeoutMs: 30_000 }),
    running.then(() => {
      throw new Error('the forwarder stopped during startup');
    }),
  ]);
  return {
    committed(eventId, transition) {
      const key = `${eventId}|${transition}`;
      const done = commits.get(key);
      if (done !== undefined) {
        commits.delete(key);
        return Promise.resolve(done);
      }
      return new Promise((resolve) => commitWaiters.set(key, resolve));
    },
    acked(sink, recordId) {
      const key = `${sink}|${recordId}`;
      const at = acks.get(key);
      if (at !== undefined) {
        acks.delete(key);
        return Promise.resolve(at);
      }
      return new Promise((resolve) => ackWaiters.set(key, resolve));
    },
    async stop() {
      controller.abort();
      await running.catch(() => undefined);
      tmp.cleanup();
    },
  };
}

/**
 * Changes the simulator's document once, alternating: injects a Reboot (a `scheduled` record) when no event is
 * pending, removes it otherwise (a `canceled` record). Returns the event and the transition to wait for.
 */
export function toggleRebootEvent(
  sim: RunningSimulator,
  pendingEventId: string | undefined,
): { eventId: string; transition: 'scheduled' | 'canceled' } {
  if (pendingEventId === undefined) {
    const eventId = sim.admin.injectEvent({ type: 'Reboot', noticeSeconds: '1h', autoStart: false }).id;
    return { eventId, transition: 'scheduled' };
  }
  sim.admin.removeEvent(pendingEventId);
  return { eventId: pendingEventId, transition: 'canceled' };
}
