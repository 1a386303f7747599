import { describe, expect, it } from 'vitest';
import { Secret } from '../../../../src/secret.ts';
import { bodyFor, flattenAttributes, severityFor, snakeCase } from '../../../../src/sinks/otel/mapping.ts';
import {
  OtelConfigError,
  otelOptionsSchema,
  resolveOtlpSettings,
} from '../../../../src/sinks/otel/options.ts';
import { makeRecord } from '../../../support/records.ts';

describe('resolveOtlpSettings', () => {
  it('defaults to http/protobuf on localhost:4318/v1/logs with a 10 s timeout', () => {
    expect(resolveOtlpSettings({}, {})).toMatchObject({
      protocol: 'http/protobuf',
      endpoint: 'http://localhost:4318/v1/logs',
      endpointOrigin: 'default',
      timeoutMs: 10_000,
      compression: 'none',
      maxBatch: 100,
    });
    expect(resolveOtlpSettings({ protocol: 'grpc' }, {}).endpoint).toBe('http://localhost:4317');
  });

  it('reads the standard variables: LOGS_ wins over the generic one; the generic endpoint gets /v1/logs', () => {
    const env = {
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector.example:4318/',
      OTEL_EXPORTER_OTLP_TIMEOUT: '5000',
      OTEL_EXPORTER_OTLP_LOGS_TIMEOUT: '2500',
      OTEL_EXPORTER_OTLP_COMPRESSION: 'gzip',
    };
    expect(resolveOtlpSettings({}, env)).toMatchObject({
      protocol: 'http/json',
      endpoint: 'https://collector.example:4318/v1/logs',
      endpointOrigin: 'OTEL_EXPORTER_OTLP_ENDPOINT',
      timeoutMs: 2500,
      compression: 'gzip',
    });
    const specific = resolveOtlpSettings(
      {},
      { ...env, OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: 'https://logs.example/ingest' },
    );
    expect(specific.endpoint).toBe('https://logs.example/ingest');
    expect(resolveOtlpSettings({}, { OTEL_EXPORTER_OTLP_LOGS_PROTOCOL: 'grpc', ...env }).protocol).toBe(
      'grpc',
    );
  });

  it('sink options win over the environment; a base URL gets /v1/logs, a URL with a path is kept', () => {
    const env = { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TIMEOUT: '5000' };
    const s = resolveOtlpSettings(
      { protocol: 'http/json', endpoint: 'http://127.0.0.1:4318', timeoutMs: 700 },
      env,
    );
    expect([s.protocol, s.endpoint, s.endpointOrigin, s.timeoutMs]).toEqual([
      'http/json',
      'http://127.0.0.1:4318/v1/logs',
      'option',
      700,
    ]);
    expect(resolveOtlpSettings({ endpoint: 'http://gw/otlp/v1/logs' }, {}).endpoint).toBe(
      'http://gw/otlp/v1/logs',
    );
  });

  it('names the offending variable', () => {
    expect(() => resolveOtlpSettings({}, { OTEL_EXPORTER_OTLP_PROTOCOL: 'thrift' })).toThrow(
      new OtelConfigError(
        'OTEL_EXPORTER_OTLP_PROTOCOL="thrift" is not one of http/protobuf, http/json, grpc',
      ),
    );
    expect(() => resolveOtlpSettings({}, { OTEL_EXPORTER_OTLP_LOGS_TIMEOUT: 'soon' })).toThrow(
      'OTEL_EXPORTER_OTLP_LOGS_TIMEOUT="soon"',
    );
    expect(() => resolveOtlpSettings({}, { OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' })).toThrow(
      'OTLP logs endpoint from OTEL_EXPORTER_OTLP_ENDPOINT is not a valid URL',
    );
  });
});

describe('otelOptionsSchema()', () => {
  it('rejects unknown keys and bad values with a message naming them', () => {
    expect(otelOptionsSchema().safeParse({ endpiont: 'http://x' }).error?.issues[0]?.message).toContain(
      'endpiont',
    );
    expect(otelOptionsSchema().safeParse({ protocol: 'udp' }).success).toBe(false);
    expect(otelOptionsSchema().safeParse({ endpoint: 'ftp://x' }).error?.issues[0]?.message).toBe(
      'endpoint must be an http:// or https:// URL',
    );
  });

  it('turns header values into Secrets that never print; a missing variable is named', () => {
    process.env.SEF_UNIT_OTEL_TOKEN = 'super-secret-token';
    const parsed = otelOptionsSchema().parse({ headers: { authorization: { env: 'SEF_UNIT_OTEL_TOKEN' } } });
    expect(parsed.headers?.authorization).toBeInstanceOf(Secret);
    expect(parsed.headers?.authorization?.reveal()).toBe('super-secret-token');
    expect(JSON.stringify(parsed)).not.toContain('super-secret-token');
    expect(String(resolveOtlpSettings(parsed, {}).headers.authorization)).toBe('[redacted]');
    const missing = otelOptionsSchema().safeParse({
      headers: { authorization: { env: 'SEF_UNIT_OTEL_NOPE' } },
    });
    expect(missing.error?.issues[0]?.message).toContain('SEF_UNIT_OTEL_NOPE');
  });
});

describe('mapping helpers', () => {
  it('snake_cases record keys', () => {
    expect(
      ['EventId', 'DurationInSeconds', 'vmId', 'notBeforeUtc', 'vmScaleSetName', 'ABCValue'].map(snakeCase),
    ).toEqual([
      'event_id',
      'duration_in_seconds',
      'vm_id',
      'not_before_utc',
      'vm_scale_set_name',
      'abc_value',
    ]);
  });

  it('flattens nested objects, keeps homogeneous arrays, JSON-encodes mixed arrays, drops nulls', () => {
    expect(
      flattenAttributes(
        { a: { bC: 1, d: null }, list: ['x', 'y'], mixed: [1, 'x'], objs: [{ k: 1 }], n: undefined },
        'p.',
      ),
    ).toEqual({ 'p.a.b_c': 1, 'p.list': ['x', 'y'], 'p.mixed': '[1,"x"]', 'p.objs': '[{"k":1}]' });
  });

  it('chooses severity by transition and type', () => {
    const table = (['scheduled', 'started', 'updated', 'completed', 'canceled', 'approved'] as const).map(
      (t) => [
        t,
        severityFor(t, 'Reboot').severityText,
        severityFor(t, 'Freeze').severityText,
        severityFor(t, 'SomethingNew').severityText,
      ],
    );
    expect(table).toEqual([
      ['scheduled', 'WARN', 'INFO', 'WARN'],
      ['started', 'WARN', 'INFO', 'WARN'],
      ['updated', 'WARN', 'INFO', 'WARN'],
      ['completed', 'INFO', 'INFO', 'INFO'],
      ['canceled', 'INFO', 'INFO', 'INFO'],
      ['approved', 'INFO', 'INFO', 'INFO'],
    ]);
  });

  it('writes a sentence without a not-before clause when NotBefore is unknown', () => {
    const r = makeRecord('scheduled', { eventType: 'Preempt' });
    r.data.notBeforeUtc = null;
    r.data.Resources = ['vm-a', 'vm-b'];
    expect(bodyFor(r)).toBe('Preempt of vm-a, vm-b scheduled.');
  });
});
