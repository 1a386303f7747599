/** Test helpers for store and delivery tests: records, a fake clock, scriptable sinks, a capturing logger. */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { type LifecycleRecord, recordType } from '../../../src/domain/index.ts';
import type { Logger } from '../../../src/log.ts';
import { DeliveryError, type Sink } from '../../../src/sinks/types.ts';

/** A realistic ~1 KiB lifecycle record whose id encodes `n`. */
export function makeRecord(n: number, overrides: Partial<LifecycleRecord> = {}): LifecycleRecord {
  const eventId = `E${String(n).padStart(6, '0')}-0000-4000-8000-000000000000`;
  return {
    specversion: '1.0',
    id: `rec-${n}`,
    source: '/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm1',
    type: recordType('scheduled'),
    subject: eventId,
    time: new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString(),
    datacontenttype: 'application/json',
    transition: 'scheduled',
    maintenancetype: 'Reboot',
    vmid: '11111111-2222-3333-4444-555555555555',
    data: {
      EventId: eventId,
      EventType: 'Reboot',
      EventStatus: 'Scheduled',
      ResourceType: 'VirtualMachine',
      Resources: ['vm1'],
      NotBefore: 'Mon, 19 Sep 2016 18:29:47 GMT',
      Description: 'Virtual machine is going to be restarted as requested by authorized user.'.repeat(4),
      EventSource: 'User',
      DurationInSeconds: -1,
      DocumentIncarnation: n,
      notBeforeUtc: '2016-09-19T18:29:47.000Z',
      affectsThisVm: true,
      vm: {
        name: 'vm1',
        vmId: '11111111-2222-3333-4444-555555555555',
        resourceId: '/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm1',
        subscriptionId: 'sub',
        resourceGroup: 'rg',
        location: 'westeurope',
        zone: '1',
        vmScaleSetName: '',
        vmSize: 'Standard_D2s_v5',
        computerName: 'vm1',
      },
      timing: { firstSeenAt: '2026-01-01T00:00:00.000Z', startedAt: null, endedAt: null, noticeSeconds: 900 },
    },
    ...overrides,
  };
}

/** Let pending promise continuations (and immediate I/O callbacks) run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
}

/** A sink scripted by the test: `failWith` decides per call; records every delivered record id. */
export class ScriptedSink implements Sink {
  readonly name: string;
  readonly maxBatch: number;
  readonly delivered: string[] = [];
  readonly calls: Array<{ ids: string[]; at: number }> = [];
  failWith: ((batch: readonly LifecycleRecord[]) => Error | undefined) | undefined;
  /** When set, deliver() waits for this promise (in-flight simulation); honours the abort signal. */
  gate: Promise<void> | undefined;
  readonly #clock: { now(): number };
  constructor(name: string, clock: { now(): number }, maxBatch = 10) {
    this.name = name;
    this.maxBatch = maxBatch;
    this.#clock = clock;
  }
  async deliver(batch: readonly LifecycleRecord[], signal: AbortSignal): Promise<void> {
    this.calls.push({ ids: batch.map((r) => r.id), at: this.#clock.now() });
    if (this.gate !== undefined) {
      const gate = this.gate;
      await new Promise<void>((resolve, reject) => {
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        void gate.then(resolve);
      });
    }
    const error = this.failWith?.(batch);
    if (error !== undefined) throw error;
    for (const r of batch) this.delivered.push(r.id);
  }
}

export const retryable = (code = 'http-503') =>
  new DeliveryError(`destination unavailable (${code})`, { retryable: true, code });
export const permanent = (code = 'http-400', failedIndex?: number) =>
  new DeliveryError(`destination rejected the record (${code})`, {
    retryable: false,
    code,
    ...(failedIndex === undefined ? {} : { failedIndex }),
  });

/** A pino logger whose JSON lines are kept in `lines`. */
export function captureLogger(): { logger: Logger; lines: () => Array<Record<string, unknown>> } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      chunks.push(String(chunk));
      cb();
    },
  });
  const logger = pino({ level: 'debug' }, stream);
  return {
    logger,
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

/** Small seeded PRNG (mulberry32) for reproducible jitter. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
