/**
 * The azuremonitor sink's pure parts: the record → row mapping (src/sinks/azuremonitor/columns.ts: every value
 * once, Data only what no column holds, the record recoverable from its row, a row at most 1.2× its record), the options
 * schema's messages, and the one-source-of-truth rule: the table and DCR shipped in packaging/azure-monitor/ and
 * the `az` command in docs/sinks-azure-monitor.md declare exactly the sink's columns, in its order.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { LifecycleRecord } from '../../../../src/domain/index.ts';
import { dataRemainder, LOG_COLUMNS, toLogRow } from '../../../../src/sinks/azuremonitor/columns.ts';
import { azureMonitorOptionsSchema } from '../../../../src/sinks/azuremonitor/options.ts';
import { makeRecord } from '../../../support/records.ts';

const root = new URL('../../../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');
const declared = LOG_COLUMNS.map((c) => ({ name: c.name, type: c.type }));

/** The record put back together from its row: the columns' values at their paths, over the row's Data. */
function recordFromRow(row: Record<string, unknown>): Record<string, unknown> {
  const record: Record<string, unknown> = { data: structuredClone(row.Data ?? {}) };
  for (const c of LOG_COLUMNS) {
    if (c.name === 'Data' || c.name === 'TimeGenerated' || !(c.name in row)) continue;
    const path = c.from.slice(2).split('.');
    let target = record;
    for (const key of path.slice(0, -1)) {
      target[key] ??= {};
      target = target[key] as Record<string, unknown>;
    }
    target[path.at(-1)!] = row[c.name];
  }
  return record;
}

/**
 * The record as a row can carry it: without specversion and datacontenttype (constants, no column holds them)
 * and without null values (Log Analytics does not tell a null from a missing value).
 */
function asStored(record: LifecycleRecord): Record<string, unknown> {
  const { specversion: _s, datacontenttype: _d, ...rest } = record;
  return withoutNulls(rest);
}

function withoutNulls(value: object): Record<string, unknown> {
  return JSON.parse(JSON.stringify(value), (_key, v: unknown) => (v === null ? undefined : v));
}

describe('record → row', () => {
  it('fills the columns from the record, TimeGenerated = the record time; a column without a value is left out', () => {
    const record = makeRecord('scheduled');
    const row = toLogRow(record);
    expect(Object.keys(row)).toEqual(LOG_COLUMNS.map((c) => c.name).filter((name) => name in row));
    expect(row).toMatchObject({
      TimeGenerated: record.time,
      Time: record.time,
      RecordId: record.id,
      RecordType: record.type,
      Source: record.source,
      Transition: 'scheduled',
      EventId: record.data.EventId,
      NotBeforeUtc: record.data.notBeforeUtc,
      VmName: record.data.vm.name,
      NoticeSeconds: record.data.timing.noticeSeconds,
    });
    for (const empty of ['StartedAt', 'EndedAt', 'Reason', 'Approval']) expect(row).not.toHaveProperty(empty);
  });

  it('Data holds only what no other column holds: every value is in the row once, and the record can be put back together from it', () => {
    const kubernetes = { nodeName: 'aks-pool-0', clusterName: 'prod', labels: { pool: 'system' } };
    const records = [
      ...(['scheduled', 'started', 'completed', 'canceled', 'updated', 'approved'] as const).map((t) =>
        makeRecord(t),
      ),
      {
        ...makeRecord('scheduled'),
        data: { ...makeRecord('scheduled').data, kubernetes, imdsExtra: { Foo: 1 } },
      },
    ];
    for (const record of records) {
      const row = toLogRow(record);
      expect(withoutNulls(recordFromRow(row))).toEqual(asStored(record));
      const data = row.Data as Record<string, unknown>;
      expect(Object.keys(data)).not.toContain('EventId');
      expect(Object.keys(data)).not.toContain('Description');
      expect(Object.keys(data.vm as object).sort()).toEqual(['computerName', 'vmId']);
    }
    expect(dataRemainder(records.at(-1)!.data)).toMatchObject({
      kubernetes,
      imdsExtra: { Foo: 1 },
      ResourceType: 'VirtualMachine',
    });
  });

  it('a row is no bigger than about 1.2 times its record, also with a 30 KB Description', () => {
    const records = [
      ...(['scheduled', 'started', 'completed', 'canceled', 'updated', 'approved'] as const).map((t) =>
        makeRecord(t),
      ),
      makeRecord('scheduled', { description: 'x'.repeat(30_000) }),
    ];
    for (const record of records) {
      const ratio =
        Buffer.byteLength(JSON.stringify(toLogRow(record))) / Buffer.byteLength(JSON.stringify(record));
      expect(ratio, record.transition).toBeLessThanOrEqual(1.2);
    }
  });

  it('carries the completed fields (inferred, observed impact) on a completed record', () => {
    const record = makeRecord('completed');
    const row = toLogRow(record);
    expect(row.Transition).toBe('completed');
    expect(row.Inferred).toBe(record.data.inferred);
    expect(row.EndedAt).toBe(record.data.timing.endedAt);
    expect(row.ObservedImpact).toEqual(record.data.observedImpact);
  });

  it('uses no column name Log Analytics reserves', () => {
    const reserved = ['id', 'type', 'tenantid', '_resourceid', '_subscriptionid', 'title', 'uniqueid'];
    expect(LOG_COLUMNS.filter((c) => reserved.includes(c.name.toLowerCase()))).toEqual([]);
    expect(LOG_COLUMNS.filter((c) => c.name.startsWith('_'))).toEqual([]);
  });
});

describe('the shipped definitions follow the column list', () => {
  interface Columns {
    columns: Array<{ name: string; type: string }>;
  }
  interface Properties {
    schema: Columns;
    streamDeclarations: Record<string, Columns>;
    dataFlows: unknown[];
  }
  const template = JSON.parse(read('packaging/azure-monitor/scheduled-events.template.json')) as {
    resources: Array<{ type: string; properties: Properties }>;
  };
  const resource = (type: string) => template.resources.find((r) => r.type === type)!.properties;

  it('the ARM template: the table ScheduledEvents_CL and the DCR stream declare the same columns', () => {
    const table = resource('Microsoft.OperationalInsights/workspaces/tables');
    expect(table.schema.columns).toEqual(declared);
    const dcr = resource('Microsoft.Insights/dataCollectionRules');
    expect(dcr.streamDeclarations['Custom-ScheduledEvents']?.columns).toEqual(declared);
    expect(dcr.dataFlows).toEqual([
      {
        streams: ['Custom-ScheduledEvents'],
        destinations: ['workspace'],
        transformKql: 'source',
        outputStream: 'Custom-ScheduledEvents_CL',
      },
    ]);
  });

  it('dcr.json (for az monitor data-collection rule create --rule-file) declares the same columns', () => {
    const rule = JSON.parse(read('packaging/azure-monitor/dcr.json'));
    expect(rule.properties.streamDeclarations['Custom-ScheduledEvents'].columns).toEqual(declared);
    expect(rule.properties.dataFlows).toEqual(resource('Microsoft.Insights/dataCollectionRules').dataFlows);
  });

  it('the az command in docs/sinks-azure-monitor.md creates the table with the same columns', () => {
    const docs = read('docs/sinks-azure-monitor.md');
    const columns = /--columns((?:\s+\\\n)?(?:\s+[A-Za-z]+=[a-z]+(?:\s+\\\n)?)+)/.exec(docs);
    expect(
      columns,
      'an `az monitor log-analytics workspace table create … --columns` command',
    ).not.toBeNull();
    const pairs = [...columns![1]!.matchAll(/([A-Za-z]+)=([a-z]+)/g)].map(([, name, type]) => ({
      name,
      type,
    }));
    expect(pairs).toEqual(declared);
  });

  it('the docs list every column with its type', () => {
    const docs = read('docs/sinks-azure-monitor.md');
    for (const c of LOG_COLUMNS) expect(docs).toContain(`| \`${c.name}\` | ${c.type} | \`${c.from}\``);
  });
});

describe('options', () => {
  const valid = {
    endpoint: 'https://my-dce-abcd.westeurope-1.ingest.monitor.azure.com',
    ruleId: 'dcr-0123456789abcdef0123456789abcdef',
  };

  it('defaults: the shipped stream, managed identity, the public cloud audience', () => {
    expect(azureMonitorOptionsSchema().parse(valid)).toMatchObject({
      streamName: 'Custom-ScheduledEvents',
      credential: { kind: 'managed-identity' },
      audience: 'https://monitor.azure.com',
      timeoutMs: 30_000,
    });
  });

  it.each([
    [{ ruleId: 'my-dcr' }, /immutable id.*dcr-.*32/],
    [{ endpoint: 'http://my-dce.ingest.monitor.azure.com' }, /https:\/\/ URL.*data collection endpoint/],
    [{ streamName: 'ScheduledEvents' }, /Custom-/],
    [
      { credential: { kind: 'client-secret', clientId: 'app' } },
      /credential.tenantId, credential.clientSecret/,
    ],
  ])('refuses %j, naming the problem and the fix', (change, message) => {
    const result = azureMonitorOptionsSchema().safeParse({ ...valid, ...change });
    expect(result.success).toBe(false);
    expect(result.error!.issues.map((i) => i.message).join('\n')).toMatch(message);
  });

  it('takes a client secret through the secret forms', () => {
    process.env.SEF_TEST_AZMON_SECRET = 'client-secret-value-123';
    try {
      const options = azureMonitorOptionsSchema().parse({
        ...valid,
        credential: {
          kind: 'client-secret',
          tenantId: '72f988bf-0000-4000-8000-5157a7e0c0de',
          clientId: '0b8d6a4e-1111-4222-8333-444455556666',
          clientSecret: { env: 'SEF_TEST_AZMON_SECRET' },
        },
      });
      expect(options.credential.clientSecret?.reveal()).toBe('client-secret-value-123');
      expect(JSON.stringify(options)).not.toContain('client-secret-value-123');
    } finally {
      delete process.env.SEF_TEST_AZMON_SECRET;
    }
  });
});
