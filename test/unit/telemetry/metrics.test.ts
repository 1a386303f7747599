import { describe, expect, it } from 'vitest';
import type { PollOutcome } from '../../../src/domain/index.ts';
import type { SinkQueueStats } from '../../../src/store/index.ts';
import {
  addSinks,
  bindOutboxStats,
  createMetrics,
  observeDeliveryEvent,
  observePollOutcome,
  observeRecords,
  timedScheduledEventsReader,
} from '../../../src/telemetry/index.ts';
import { parsePrometheusText, sampleValue } from '../../support/prom-text.ts';
import { makeRecord } from '../../support/records.ts';

const observed = { wallMs: 1_758_300_000_000, monotonicMs: 1000 };
const doc = (changed: boolean): PollOutcome => ({
  kind: 'document',
  document: { DocumentIncarnation: 1, Events: [] },
  observed,
  changed,
});
const failure: PollOutcome = {
  kind: 'failure',
  reason: 'timeout',
  message: 'timed out',
  observed,
  consecutiveFailures: 1,
};

function stats(sink: string, pending: number, oldestCreatedAt: number | null): SinkQueueStats {
  return {
    sink,
    pending,
    pendingBytes: 0,
    oldestCreatedAt,
    nextAttemptAt: null,
    headAttempts: 0,
    lastError: null,
    deadLetters: 2,
    deadLettersDropped: 0,
  };
}

describe('createMetrics and the observe* functions', () => {
  it('counts polls, failures by reason, document changes, records by transition and IMDS latency', async () => {
    const m = createMetrics({ processMetrics: false });
    observePollOutcome(m, doc(true), 4);
    observePollOutcome(m, doc(false), 6);
    observePollOutcome(m, failure, 2500);
    observeRecords(m, [makeRecord('scheduled'), makeRecord('scheduled'), makeRecord('completed')]);
    const s = parsePrometheusText(await m.registry.metrics());
    expect(sampleValue(s, 'sef_polls_total')).toBe(3);
    expect(sampleValue(s, 'sef_poll_failures_total', { reason: 'timeout' })).toBe(1);
    expect(sampleValue(s, 'sef_document_changes_total')).toBe(1);
    expect(sampleValue(s, 'sef_last_successful_poll_timestamp_seconds')).toBe(1_758_300_000);
    expect(sampleValue(s, 'sef_records_total', { transition: 'scheduled' })).toBe(2);
    expect(sampleValue(s, 'sef_records_total', { transition: 'completed' })).toBe(1);
    expect(sampleValue(s, 'sef_imds_latency_seconds_count')).toBe(3);
    expect(sampleValue(s, 'sef_imds_latency_seconds_bucket', { le: '0.005' })).toBe(1);
    expect(sampleValue(s, 'sef_imds_latency_seconds_bucket', { le: '5' })).toBe(3);
  });

  it('maps DeliveryEngine events to deliveries, failures, retries, dead letters, store errors and latency', async () => {
    const m = createMetrics({ processMetrics: false });
    observeDeliveryEvent(m, {
      type: 'delivered',
      sink: 'otel',
      count: 2,
      latenciesMs: [40, 3000],
      recordIds: ['a', 'b'],
    });
    observeDeliveryEvent(m, {
      type: 'retry',
      sink: 'otel',
      attempts: 1,
      delayMs: 900,
      code: 'http-503',
      message: 'x',
    });
    observeDeliveryEvent(m, {
      type: 'retry',
      sink: 'otel',
      attempts: 2,
      delayMs: 1900,
      code: 'timeout',
      message: 'x',
    });
    observeDeliveryEvent(m, {
      type: 'deadLettered',
      sink: 'otel',
      count: 1,
      reason: 'permanent',
      code: 'http-400',
    });
    observeDeliveryEvent(m, { type: 'deadLettered', sink: 'hook', count: 3, reason: 'overflow' });
    observeDeliveryEvent(m, { type: 'storeError', sink: 'otel', full: true, message: 'SQLITE_FULL' });
    const s = parsePrometheusText(await m.registry.metrics());
    expect(sampleValue(s, 'sef_deliveries_total', { sink: 'otel' })).toBe(2);
    expect(sampleValue(s, 'sef_delivery_failures_total', { sink: 'otel', code: 'http-503' })).toBe(1);
    expect(sampleValue(s, 'sef_delivery_failures_total', { sink: 'otel', code: 'timeout' })).toBe(1);
    expect(sampleValue(s, 'sef_delivery_failures_total', { sink: 'otel', code: 'http-400' })).toBe(1);
    expect(sampleValue(s, 'sef_delivery_retries_total', { sink: 'otel' })).toBe(2);
    expect(sampleValue(s, 'sef_dead_letters_total', { sink: 'otel', reason: 'permanent' })).toBe(1);
    expect(sampleValue(s, 'sef_dead_letters_total', { sink: 'hook', reason: 'overflow' })).toBe(3);
    expect(sampleValue(s, 'sef_store_errors_total', { sink: 'otel', full: 'true' })).toBe(1);
    expect(sampleValue(s, 'sef_delivery_latency_seconds_count', { sink: 'otel' })).toBe(2);
    expect(sampleValue(s, 'sef_delivery_latency_seconds_bucket', { sink: 'otel', le: '0.05' })).toBe(1);
    expect(sampleValue(s, 'sef_delivery_latency_seconds_sum', { sink: 'otel' })).toBeCloseTo(3.04);
  });

  it('reads outbox gauges from the bound stats source on every scrape', async () => {
    const now = 1_000_000;
    const m = createMetrics({ processMetrics: false, now: () => now });
    let rows = [stats('otel', 5, now - 90_000), stats('hook', 0, null)];
    bindOutboxStats(m, () => rows);
    let s = parsePrometheusText(await m.registry.metrics());
    expect(sampleValue(s, 'sef_outbox_pending', { sink: 'otel' })).toBe(5);
    expect(sampleValue(s, 'sef_outbox_oldest_age_seconds', { sink: 'otel' })).toBe(90);
    expect(sampleValue(s, 'sef_outbox_oldest_age_seconds', { sink: 'hook' })).toBe(0);
    expect(sampleValue(s, 'sef_dead_letter_rows', { sink: 'otel' })).toBe(2);
    rows = [stats('otel', 0, null)];
    s = parsePrometheusText(await m.registry.metrics());
    expect(sampleValue(s, 'sef_outbox_pending', { sink: 'otel' })).toBe(0);
    expect(sampleValue(s, 'sef_outbox_pending', { sink: 'hook' })).toBeUndefined();
  });

  it('declared sinks have every per-sink series at 0, and counts already made survive a second declaration', async () => {
    const m = createMetrics({ processMetrics: false, sinks: ['otel'] });
    let s = parsePrometheusText(await m.registry.metrics());
    for (const reason of ['permanent', 'overflow', 'expired']) {
      expect(sampleValue(s, 'sef_dead_letters_total', { sink: 'otel', reason })).toBe(0);
    }
    expect(sampleValue(s, 'sef_store_errors_total', { sink: 'otel', full: 'true' })).toBe(0);
    expect(sampleValue(s, 'sef_store_errors_total', { sink: 'otel', full: 'false' })).toBe(0);
    expect(sampleValue(s, 'sef_deliveries_total', { sink: 'otel' })).toBe(0);
    expect(sampleValue(s, 'sef_delivery_retries_total', { sink: 'otel' })).toBe(0);
    expect(sampleValue(s, 'sef_delivery_latency_seconds_count', { sink: 'otel' })).toBe(0);
    // No store bound yet: the gauges read 0, not nothing.
    expect(sampleValue(s, 'sef_outbox_pending', { sink: 'otel' })).toBe(0);
    expect(sampleValue(s, 'sef_outbox_oldest_age_seconds', { sink: 'otel' })).toBe(0);
    expect(sampleValue(s, 'sef_dead_letter_rows', { sink: 'otel' })).toBe(0);
    expect(sampleValue(s, 'sef_poll_failures_total', { reason: 'gone' })).toBe(0);
    expect(sampleValue(s, 'sef_records_total', { transition: 'approved' })).toBe(0);

    observeDeliveryEvent(m, {
      type: 'delivered',
      sink: 'otel',
      count: 1,
      latenciesMs: [5],
      recordIds: ['a'],
    });
    // A sink nobody declared gets all its series with its first event.
    observeDeliveryEvent(m, { type: 'deadLettered', sink: 'hook', count: 2, reason: 'expired' });
    addSinks(m, ['otel', 'hook']);
    bindOutboxStats(m, () => [stats('hook', 0, null)]);
    s = parsePrometheusText(await m.registry.metrics());
    expect(sampleValue(s, 'sef_deliveries_total', { sink: 'otel' })).toBe(1);
    expect(sampleValue(s, 'sef_delivery_latency_seconds_count', { sink: 'otel' })).toBe(1);
    expect(sampleValue(s, 'sef_dead_letters_total', { sink: 'hook', reason: 'expired' })).toBe(2);
    expect(sampleValue(s, 'sef_dead_letters_total', { sink: 'hook', reason: 'permanent' })).toBe(0);
    expect(sampleValue(s, 'sef_outbox_pending', { sink: 'otel' })).toBe(0);
    expect(sampleValue(s, 'sef_dead_letter_rows', { sink: 'hook' })).toBe(2);
  });

  it('a throwing stats source does not break the scrape', async () => {
    const m = createMetrics({ processMetrics: false });
    bindOutboxStats(m, () => {
      throw new Error('database is locked');
    });
    const s = parsePrometheusText(await m.registry.metrics());
    expect(sampleValue(s, 'sef_polls_total')).toBe(0);
  });

  it('prefixes every metric with sef_, including process metrics, and registers nothing globally', async () => {
    const m = createMetrics();
    const names = new Set(parsePrometheusText(await m.registry.metrics()).map((x) => x.name));
    expect(names.size).toBeGreaterThan(10);
    for (const name of names) expect(name.startsWith('sef_')).toBe(true);
    expect(names.has('sef_process_cpu_seconds_total')).toBe(true);
    const second = createMetrics(); // no "already registered" error: each call has its own Registry
    expect(second.registry).not.toBe(m.registry);
  });

  it('timedScheduledEventsReader observes each IMDS request duration, failures included', async () => {
    const m = createMetrics({ processMetrics: false });
    let clock = 0;
    const reader = timedScheduledEventsReader(
      {
        getScheduledEvents: async () => {
          clock += 3;
          if (clock > 3) throw new Error('ECONNREFUSED');
          return { document: { DocumentIncarnation: 1, Events: [] }, body: '{}' };
        },
      },
      m,
      () => clock,
    );
    expect((await reader.getScheduledEvents()).document.DocumentIncarnation).toBe(1);
    await expect(reader.getScheduledEvents()).rejects.toThrow('ECONNREFUSED');
    const s = parsePrometheusText(await m.registry.metrics());
    expect(sampleValue(s, 'sef_imds_latency_seconds_count')).toBe(2);
    expect(sampleValue(s, 'sef_imds_latency_seconds_sum')).toBeCloseTo(0.006);
  });
});
