/**
 * The otel sink against a real OTLP/HTTP receiver on 127.0.0.1 (protobuf and JSON) and a real gRPC receiver:
 * the exact wire content, and acknowledgement semantics (400 → permanent, 503 / hang → retryable).
 */
import * as grpc from '@grpc/grpc-js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createOtelSink } from '../../../../src/sinks/otel/index.ts';
import { otelOptionsSchema } from '../../../../src/sinks/otel/options.ts';
import { findSinkFactory } from '../../../../src/sinks/registry.ts';
import { DeliveryError } from '../../../../src/sinks/types.ts';
import { readVersion } from '../../../../src/version.ts';
import {
  type OtlpGrpcReceiver,
  type OtlpHttpReceiver,
  type ReceivedLogRecord,
  startOtlpGrpcReceiver,
  startOtlpHttpReceiver,
} from '../../../support/otlp-receiver.ts';
import { makeRecord } from '../../../support/records.ts';
import { makeContext, VM } from './records.ts';

// Secret header values are resolved from the process environment (src/secret.ts).
process.env.OTEL_TEST_KEY = 'k-123';
process.env.OTEL_TEST_TOKEN = 'Bearer t-456';
const NO_ENV = {};
const signal = () => new AbortController().signal;

const EXPECTED_RESOURCE = {
  'service.name': 'scheduled-events-forwarder',
  'service.version': readVersion(),
  'cloud.provider': 'azure',
  'cloud.platform': 'azure.vm',
  'cloud.region': 'westeurope',
  'cloud.availability_zone': '2',
  'cloud.account.id': '11111111-2222-3333-4444-555555555555',
  'cloud.resource_id': VM.resourceId,
  'azure.resource_group.name': 'rg-web-prod',
  'host.id': VM.vmId,
  'host.name': 'vm-web-01',
  'host.type': 'Standard_D4s_v5',
};

const EXPECTED_SCHEDULED_ATTRIBUTES = {
  'cloudevents.event_id': 'b7440dd8-645c-5a31-acbc-2137eb343f90', // the transform's id of the fixture record
  'cloudevents.event_source': VM.resourceId,
  'cloudevents.event_spec_version': '1.0',
  'cloudevents.event_type': 'io.github.scheduledeventsforwarder.azure.scheduledevent.scheduled',
  'cloudevents.event_subject': '3DA1B9AA-1111-2222-3333-444455556666',
  'scheduledevent.transition': 'scheduled',
  'scheduledevent.event_id': '3DA1B9AA-1111-2222-3333-444455556666',
  'scheduledevent.event_type': 'Reboot',
  'scheduledevent.first_seen_status': 'Scheduled',
  'scheduledevent.occurrence': 1,
  'scheduledevent.event_status': 'Scheduled',
  'scheduledevent.resource_type': 'VirtualMachine',
  'scheduledevent.resources': ['vm-web-01'],
  'scheduledevent.not_before': 'Fri, 19 Sep 2025 18:29:47 GMT',
  'scheduledevent.description': 'Host server is undergoing maintenance.',
  'scheduledevent.event_source': 'Platform',
  'scheduledevent.duration_in_seconds': -1,
  'scheduledevent.document_incarnation': 7,
  'scheduledevent.not_before_utc': '2025-09-19T18:29:47.000Z',
  'scheduledevent.affects_this_vm': true,
  'scheduledevent.vm.name': 'vm-web-01',
  'scheduledevent.vm.vm_id': VM.vmId,
  'scheduledevent.vm.resource_id': VM.resourceId,
  'scheduledevent.vm.subscription_id': VM.subscriptionId,
  'scheduledevent.vm.resource_group': 'rg-web-prod',
  'scheduledevent.vm.location': 'westeurope',
  'scheduledevent.vm.zone': '2',
  'scheduledevent.vm.vm_scale_set_name': '',
  'scheduledevent.vm.vm_size': 'Standard_D4s_v5',
  'scheduledevent.vm.computer_name': 'vm-web-01',
  'scheduledevent.timing.first_seen_at': '2025-09-19T18:14:47.123Z',
  'scheduledevent.timing.notice_seconds': 900,
};

function expectScheduledReboot(r: ReceivedLogRecord | undefined): void {
  expect(r).toBeDefined();
  expect(r!.eventName).toBe('io.github.scheduledeventsforwarder.azure.scheduledevent.scheduled');
  expect(r!.severityNumber).toBe(13);
  expect(r!.severityText).toBe('WARN');
  expect(r!.body).toBe('Reboot of vm-web-01 scheduled, not before 2025-09-19T18:29:47.000Z.');
  expect(r!.timeUnixNano).toBe('1758305687123000000');
  expect(r!.attributes).toEqual(EXPECTED_SCHEDULED_ATTRIBUTES);
  expect(r!.resource).toEqual(EXPECTED_RESOURCE);
  expect(r!.scope).toEqual({ name: 'scheduled-events-forwarder', version: readVersion() });
}

describe.each(['http/protobuf', 'http/json'] as const)('otel sink over %s', (protocol) => {
  let receiver: OtlpHttpReceiver;
  beforeEach(async () => {
    receiver = await startOtlpHttpReceiver();
  });
  afterEach(async () => {
    await receiver.close();
  });

  const sinkFor = (extra: Record<string, unknown> = {}) =>
    createOtelSink(
      'otel-test',
      otelOptionsSchema().parse({ protocol, endpoint: receiver.url, timeoutMs: 1500, ...extra }),
      makeContext(),
      NO_ENV,
    );

  it('sends one LogRecord per record with the documented eventName, severity, body, attributes and resource', async () => {
    const sink = sinkFor();
    const batch = [
      makeRecord('scheduled'),
      makeRecord('started'),
      makeRecord('completed'),
      makeRecord('scheduled', { eventType: 'Freeze', eventId: 'F1' }),
      makeRecord('canceled', { eventType: 'Preempt', eventId: 'P1' }),
      makeRecord('updated', { eventType: 'Terminate', eventId: 'T1' }),
      makeRecord('approved', { eventType: 'Redeploy', eventId: 'R1' }),
    ];
    await sink.deliver(batch, signal());
    await sink.close();

    expect(receiver.accepted).toHaveLength(1);
    expect(receiver.accepted[0]!.contentType).toContain(protocol === 'http/json' ? 'json' : 'protobuf');
    const records = receiver.acceptedRecords();
    expect(records).toHaveLength(7);
    expectScheduledReboot(records[0]);
    expect(
      records.map((r) => [r.eventName.split('.').at(-1), r.severityText, r.severityNumber, r.body]),
    ).toEqual([
      ['scheduled', 'WARN', 13, 'Reboot of vm-web-01 scheduled, not before 2025-09-19T18:29:47.000Z.'],
      ['started', 'WARN', 13, 'Reboot of vm-web-01 started.'],
      ['completed', 'INFO', 9, 'Reboot of vm-web-01 completed.'],
      ['scheduled', 'INFO', 9, 'Freeze of vm-web-01 scheduled, not before 2025-09-19T18:29:47.000Z.'],
      ['canceled', 'INFO', 9, 'Preempt of vm-web-01 canceled.'],
      ['updated', 'WARN', 13, 'Terminate of vm-web-01 updated, not before 2025-09-19T18:29:47.000Z.'],
      ['approved', 'INFO', 9, 'Redeploy of vm-web-01 approved.'],
    ]);
    expect(records.map((r) => r.attributes['cloudevents.event_id'])).toEqual(batch.map((r) => r.id));
  });

  it('sends configured headers (secret values) and fills the resource from SinkContext.vm() when the record lacks it', async () => {
    const sink = createOtelSink(
      'otel-test',
      otelOptionsSchema().parse({
        protocol,
        endpoint: receiver.url,
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the config syntax for an env secret
        headers: { 'x-api-key': '${OTEL_TEST_KEY}' },
      }),
      makeContext({ ...VM, resourceGroupName: 'rg-live', osType: 'Linux', vmSize: 'Standard_X' }),
      NO_ENV,
    );
    const record = makeRecord('completed');
    // A record produced before the VM identity was known: empty vm fields.
    record.data.vm = { ...record.data.vm, resourceGroup: '', vmSize: '' };
    await sink.deliver([record], signal());
    expect(receiver.accepted[0]!.headers['x-api-key']).toBe('k-123');
    const r = receiver.acceptedRecords()[0]!;
    expect(r.resource['azure.resource_group.name']).toBe('rg-live');
    expect(r.resource['host.type']).toBe('Standard_X');
    expect(r.resource['host.id']).toBe(VM.vmId);
  });

  it('compresses with gzip when configured', async () => {
    const sink = sinkFor({ compression: 'gzip' });
    await sink.deliver([makeRecord('scheduled')], signal());
    await sink.close();
    expect(receiver.accepted[0]!.headers['content-encoding']).toBe('gzip');
    expectScheduledReboot(receiver.acceptedRecords()[0]);
  });

  it('HTTP 400 → permanent DeliveryError with code http-400', async () => {
    receiver.enqueue({ status: 400, body: 'bad' });
    const sink = sinkFor();
    const error = await sink.deliver([makeRecord('scheduled')], signal()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeliveryError);
    expect((error as DeliveryError).retryable).toBe(false);
    expect((error as DeliveryError).code).toBe('http-400');
    expect(receiver.accepted).toHaveLength(0);
    // Nothing was acknowledged; a later delivery of the same record succeeds.
    await sink.deliver([makeRecord('scheduled')], signal());
    expect(receiver.accepted).toHaveLength(1);
    await sink.close();
  });

  it('HTTP 503 beyond the timeout → retryable DeliveryError; the retried batch then arrives', async () => {
    receiver.setDefault({ status: 503 });
    const sink = sinkFor({ timeoutMs: 500 });
    const error = await sink.deliver([makeRecord('started')], signal()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeliveryError);
    expect((error as DeliveryError).retryable).toBe(true);
    expect(receiver.attempts.length).toBeGreaterThanOrEqual(1);
    expect(receiver.accepted).toHaveLength(0);

    receiver.setDefault({ status: 200 });
    await sink.deliver([makeRecord('started')], signal());
    expect(receiver.acceptedRecords().map((r) => r.attributes['cloudevents.event_id'])).toEqual([
      makeRecord('started').id,
    ]);
    await sink.close();
  });

  it('a collector that never answers → retryable timeout DeliveryError', async () => {
    receiver.enqueue({ hang: true });
    const sink = sinkFor({ timeoutMs: 300 });
    const error = await sink.deliver([makeRecord('scheduled')], signal()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeliveryError);
    expect((error as DeliveryError).retryable).toBe(true);
    expect((error as DeliveryError).code).toBe('timeout');
    await sink.close();
  });
});

describe('otel sink configuration', () => {
  it('is registered as type otel', () => {
    expect(findSinkFactory('otel')?.type).toBe('otel');
  });

  it('honours the standard OTEL_EXPORTER_OTLP_* variables when the sink has no options', async () => {
    const receiver = await startOtlpHttpReceiver();
    vi.stubEnv('OTEL_EXPORTER_OTLP_PROTOCOL', 'http/json');
    vi.stubEnv('OTEL_EXPORTER_OTLP_ENDPOINT', receiver.url);
    vi.stubEnv('OTEL_EXPORTER_OTLP_HEADERS', 'x-tenant=t1');
    vi.stubEnv('OTEL_SERVICE_NAME', 'sef-on-vm');
    try {
      const factory = findSinkFactory('otel')!;
      const sink = await factory.create('otel', factory.optionsSchema.parse({}), makeContext());
      await sink.deliver([makeRecord('completed')], signal());
      await sink.close?.();
      expect(receiver.accepted[0]!.contentType).toContain('json');
      expect(receiver.accepted[0]!.headers['x-tenant']).toBe('t1');
      expect(receiver.acceptedRecords()[0]!.resource['service.name']).toBe('sef-on-vm');
    } finally {
      vi.unstubAllEnvs();
      await receiver.close();
    }
  });

  it('connection refused → retryable network error naming the endpoint without secrets', async () => {
    const receiver = await startOtlpHttpReceiver();
    const url = receiver.url;
    await receiver.close();
    const sink = createOtelSink(
      'otel-test',
      otelOptionsSchema().parse({ endpoint: url, timeoutMs: 300 }),
      makeContext(),
      NO_ENV,
    );
    const error = (await sink
      .deliver([makeRecord('scheduled')], signal())
      .catch((e: unknown) => e)) as DeliveryError;
    expect(error).toBeInstanceOf(DeliveryError);
    expect(error.retryable).toBe(true);
    expect(error.message).toContain(`${url}/v1/logs`);
    await sink.close();
  });

  it('an aborted signal rejects as retryable without waiting for the exporter', async () => {
    const receiver = await startOtlpHttpReceiver();
    receiver.setDefault({ hang: true });
    const sink = createOtelSink(
      'otel-test',
      otelOptionsSchema().parse({ endpoint: receiver.url, timeoutMs: 30_000 }),
      makeContext(),
      NO_ENV,
    );
    const controller = new AbortController();
    const pending = sink.deliver([makeRecord('scheduled')], controller.signal).catch((e: unknown) => e);
    await expect.poll(() => receiver.attempts.length).toBe(1);
    controller.abort();
    const error = (await pending) as DeliveryError;
    expect(error.code).toBe('aborted');
    expect(error.retryable).toBe(true);
    await sink.close(); // bounded: does not wait for the hanging export
    await receiver.close();
  });
});

describe('otel sink over grpc', () => {
  let receiver: OtlpGrpcReceiver;
  beforeEach(async () => {
    receiver = await startOtlpGrpcReceiver();
  });
  afterEach(async () => {
    await receiver.close();
  });

  const sinkFor = () =>
    createOtelSink(
      'otel-grpc',
      otelOptionsSchema().parse({
        protocol: 'grpc',
        endpoint: receiver.url,
        timeoutMs: 1000,
        headers: { authorization: { env: 'OTEL_TEST_TOKEN' } },
      }),
      makeContext(),
      NO_ENV,
    );

  it('exports the same LogRecord content with metadata headers', async () => {
    const sink = sinkFor();
    await sink.deliver([makeRecord('scheduled')], signal());
    await sink.close();
    expect(receiver.accepted).toHaveLength(1);
    expect(receiver.accepted[0]!.metadata.authorization).toBe('Bearer t-456');
    expectScheduledReboot(receiver.acceptedRecords()[0]);
  });

  it('INVALID_ARGUMENT → permanent, UNAVAILABLE → retryable, no answer → retryable', async () => {
    const sink = sinkFor();
    receiver.enqueue(
      { code: grpc.status.INVALID_ARGUMENT },
      { code: grpc.status.UNAVAILABLE },
      { hang: true },
    );
    const invalid = (await sink
      .deliver([makeRecord('scheduled')], signal())
      .catch((e: unknown) => e)) as DeliveryError;
    expect(invalid).toBeInstanceOf(DeliveryError);
    expect([invalid.retryable, invalid.code]).toEqual([false, 'grpc-INVALID_ARGUMENT']);
    const unavailable = (await sink
      .deliver([makeRecord('scheduled')], signal())
      .catch((e: unknown) => e)) as DeliveryError;
    expect([unavailable.retryable, unavailable.code]).toEqual([true, 'grpc-UNAVAILABLE']);
    const hung = (await sink
      .deliver([makeRecord('scheduled')], signal())
      .catch((e: unknown) => e)) as DeliveryError;
    expect([hung.retryable, hung.code]).toEqual([true, 'grpc-DEADLINE_EXCEEDED']);
    expect(receiver.accepted).toHaveLength(0);
    await sink.close();
  });
});
