import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ImdsResponseError } from '../../../../src/sources/imds-protocol/errors.ts';
import {
  parseInstanceMetadata,
  parseNotBefore,
  parseScheduledEventsDocument,
} from '../../../../src/sources/imds-protocol/parse.ts';
import {
  INVALID_BODIES,
  ISO_AND_UNKNOWN,
  LIVE_MIGRATION,
  ODD_CASING,
  OLD_API_VERSION,
  POWERSHELL_EMPTY,
  TWO_EVENTS,
  WRONG_WEEKDAY,
} from '../../../support/imds-payloads.ts';

describe('parseScheduledEventsDocument', () => {
  it("parses the documents' 4-document live-migration example", () => {
    const docs = LIVE_MIGRATION.map((body) => parseScheduledEventsDocument(body));
    expect(docs.map((d) => d.DocumentIncarnation)).toEqual([1, 2, 3, 4]);
    expect(docs[0]!.Events).toEqual([]);
    expect(docs[3]!.Events).toEqual([]);
    expect(docs[1]!.Events).toEqual([
      {
        EventId: 'C7061BAC-AFDC-4513-B24B-AA5F13A16123',
        EventType: 'Freeze',
        ResourceType: 'VirtualMachine',
        Resources: ['WestNO_0', 'WestNO_1'],
        EventStatus: 'Scheduled',
        NotBefore: 'Mon, 11 Apr 2022 22:26:58 GMT',
        notBeforeUtc: '2022-04-11T22:26:58.000Z',
        Description:
          'Virtual machine is being paused because of a memory-preserving Live Migration operation.',
        EventSource: 'Platform',
        DurationInSeconds: 5,
      },
    ]);
    const started = docs[2]!.Events[0]!;
    expect(started.EventStatus).toBe('Started');
    expect(started.NotBefore).toBe('');
    expect(started.notBeforeUtc).toBeNull();
  });

  it('accepts PowerShell ConvertTo-Json formatting with CRLF and an empty array', () => {
    expect(parseScheduledEventsDocument(POWERSHELL_EMPTY)).toEqual({ DocumentIncarnation: 0, Events: [] });
  });

  it('parses NotBefore with a wrong weekday name (as in Microsoft docs)', () => {
    const event = parseScheduledEventsDocument(WRONG_WEEKDAY).Events[0]!;
    expect(event.NotBefore).toBe('Mon, 11 Apr 2026 22:26:58 GMT');
    expect(event.notBeforeUtc).toBe('2026-04-11T22:26:58.000Z');
    expect(event.Resources).toEqual(['FrontEnd_IN_0', 'BackEnd_IN_0']);
  });

  it('fills fields missing in old api-versions and accepts a string incarnation', () => {
    const doc = parseScheduledEventsDocument(OLD_API_VERSION);
    expect(doc.DocumentIncarnation).toBe(1);
    const event = doc.Events[0]!;
    expect(event.EventType).toBe('Preempt');
    expect(event.Description).toBe('');
    expect(event.EventSource).toBe('');
    expect(event.DurationInSeconds).toBe(-1);
    expect(event.notBeforeUtc).toBe('2019-07-02T07:43:07.000Z');
    expect(event.extra).toBeUndefined();
  });

  it('normalises casing of known EventType/EventStatus/EventSource, missing NotBefore and Resources', () => {
    const event = parseScheduledEventsDocument(ODD_CASING).Events[0]!;
    expect(event.EventType).toBe('Reboot');
    expect(event.EventStatus).toBe('Started');
    expect(event.EventSource).toBe('Platform');
    expect(event.NotBefore).toBe('');
    expect(event.notBeforeUtc).toBeNull();
    expect(event.Resources).toEqual([]);
    expect(event.DurationInSeconds).toBe(-1);
  });

  it('keeps unknown EventType values and unknown fields, parses ISO 8601 NotBefore and string durations', () => {
    const event = parseScheduledEventsDocument(ISO_AND_UNKNOWN).Events[0]!;
    expect(event.EventType).toBe('Hibernate');
    expect(event.EventSource).toBe('User');
    expect(event.NotBefore).toBe('2024-01-15T10:00:00Z');
    expect(event.notBeforeUtc).toBe('2024-01-15T10:00:00.000Z');
    expect(event.DurationInSeconds).toBe(30);
    expect(event.Description).toBe('');
    expect(event.extra).toEqual({ OSImageVersion: '1.2.3' });
  });

  it('parses several simultaneous events for different VMs', () => {
    const doc = parseScheduledEventsDocument(TWO_EVENTS);
    expect(doc.Events.map((e) => [e.EventId, e.Resources[0]])).toEqual([
      ['A123BC45-1234-5678-AB90-ABCDEF123456', 'sample_4'],
      ['B123BC45-1234-5678-AB90-ABCDEF123456', 'sample_1'],
    ]);
    expect(doc.Events.every((e) => e.notBeforeUtc === '2017-12-07T05:23:12.000Z')).toBe(true);
  });

  it('keeps a non-array Resources value in extra instead of failing the whole document', () => {
    const doc = parseScheduledEventsDocument(
      '{"DocumentIncarnation":5,"Events":[{"EventId":"x","EventType":"Reboot","Resources":"vm-1"}]}',
    );
    expect(doc.Events[0]!.Resources).toEqual([]);
    expect(doc.Events[0]!.extra).toEqual({ Resources: 'vm-1' });
  });

  for (const { name, body, problem } of INVALID_BODIES) {
    it(`rejects ${name} with ImdsResponseError naming the problem`, () => {
      let caught: unknown;
      try {
        parseScheduledEventsDocument(body);
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(ImdsResponseError);
      const error = caught as ImdsResponseError;
      expect(error.reason).toBe('invalid-response');
      expect(error.retryable).toBe(false);
      expect(error.message).toMatch(problem);
      expect(error.excerpt).toBe(body.replace(/\s+/g, ' ').trim().slice(0, 200));
    });
  }

  it('keeps the excerpt short for large bodies', () => {
    const html = `<html>${'x'.repeat(5000)}</html>`;
    expect(() => parseScheduledEventsDocument(html)).toThrow(ImdsResponseError);
    try {
      parseScheduledEventsDocument(html);
    } catch (error) {
      expect((error as ImdsResponseError).excerpt!.length).toBeLessThanOrEqual(201);
    }
  });
});

describe('parseNotBefore', () => {
  it.each([
    ['Mon, 19 Sep 2016 18:29:47 GMT', '2016-09-19T18:29:47.000Z'],
    ['Sat, 19 Sep 2016 18:29:47 GMT', '2016-09-19T18:29:47.000Z'],
    ['19 Sep 2016 18:29:47 GMT', '2016-09-19T18:29:47.000Z'],
    ['mon, 1 sep 2016 08:09:07 gmt', '2016-09-01T08:09:07.000Z'],
    ['Mon, 19 Sep 2016 18:29:47 +0200', '2016-09-19T16:29:47.000Z'],
    ['2016-09-19T18:29:47Z', '2016-09-19T18:29:47.000Z'],
    ['2016-09-19T18:29:47', '2016-09-19T18:29:47.000Z'],
    ['2016-09-19T18:29:47.250+01:00', '2016-09-19T17:29:47.250Z'],
  ])('%s -> %s', (raw, iso) => {
    expect(parseNotBefore(raw)).toBe(iso);
  });

  it('round-trips any instant written as RFC 1123, whatever the weekday name says', () => {
    const weekdays = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2100, 0, 1) }),
        fc.constantFrom(...weekdays),
        (ms, weekday) => {
          const instant = Math.floor(ms / 1000) * 1000;
          const rfc1123 = new Date(instant).toUTCString().replace(/^[A-Za-z]{3}/, weekday);
          expect(parseNotBefore(rfc1123)).toBe(new Date(instant).toISOString());
        },
      ),
    );
  });

  it.each(['', '   ', '20170702', 'soon', 'Mon, 31 Feb 2022 10:00:00 GMT', 'Mon, 11 Foo 2022 22:26:58 GMT'])(
    '%j -> null',
    (raw) => {
      expect(parseNotBefore(raw)).toBeNull();
    },
  );
});

describe('parseInstanceMetadata', () => {
  it('extracts the compute identity and fills missing values with ""', () => {
    const identity = parseInstanceMetadata(
      JSON.stringify({
        compute: {
          name: 'vm-3',
          vmId: '02aab8a4-74ef-476e-8182-f6d2ba4166a6',
          resourceId: '/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm-3',
          subscriptionId: 'sub',
          resourceGroupName: 'rg',
          location: 'westeurope',
          zone: '',
          vmSize: 'Standard_D2s_v5',
          osType: 'Linux',
          osProfile: { computerName: 'vm-3-host', adminUsername: 'azureuser' },
        },
        network: {},
      }),
    );
    expect(identity).toEqual({
      name: 'vm-3',
      vmId: '02aab8a4-74ef-476e-8182-f6d2ba4166a6',
      resourceId: '/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm-3',
      subscriptionId: 'sub',
      resourceGroupName: 'rg',
      location: 'westeurope',
      zone: '',
      vmScaleSetName: '',
      vmSize: 'Standard_D2s_v5',
      osType: 'Linux',
      computerName: 'vm-3-host',
    });
  });

  it('rejects an answer without compute', () => {
    expect(() => parseInstanceMetadata('{"network":{}}')).toThrow(/no "compute" object/);
    expect(() => parseInstanceMetadata('<html></html>')).toThrow(ImdsResponseError);
  });
});
