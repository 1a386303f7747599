import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { HEARTBEAT_TYPE, type LifecycleRecord, RECORD_TYPE_PREFIX } from '../../../src/domain/index.ts';
import { type FleetEvent, foldEvent, occurrenceOf } from '../../../src/fleet/fold.ts';
import { type FleetHistory, openHistory } from '../../../src/fleet/history/index.ts';
import {
  MAX_BODY_BYTES,
  MAX_DEPTH,
  MAX_DESCRIPTION_LENGTH,
  MAX_ID_LENGTH,
  MAX_PARSE_BYTES,
  MAX_REASON_LENGTH,
  MAX_RESOURCES,
  MAX_SOURCE_LENGTH,
  parseRecord,
} from '../../../src/fleet/validate.ts';
import { freezeLifecycle, iso, record } from '../../support/fleet-records.ts';
import { makeTempDir } from '../../support/tmp.ts';

const { readFileSync } = process.getBuiltinModule('node:fs');

/** The examples of docs/record-format.md: real outputs of the transform. */
function documentedRecords(): LifecycleRecord[] {
  const text = readFileSync(new URL('../../../docs/record-format.md', import.meta.url), 'utf8');
  return [...text.matchAll(/```json\n([\s\S]*?)\n```/g)]
    .map((m) => JSON.parse(m[1]!) as LifecycleRecord)
    .filter((r) => r.type !== HEARTBEAT_TYPE); // heartbeats are not lifecycle records (own validation)
}

/** Every good fixture: the test helpers' records of every transition and the documented examples. */
function goodRecords(): LifecycleRecord[] {
  return [
    ...freezeLifecycle(),
    ...freezeLifecycle('web_2', 'E2'),
    record('scheduled', { at: 0, notBeforeAt: null }),
    record('started', { at: 5, startedAt: 5, firstSeenStatus: 'Started', notBeforeAt: null }),
    record('updated', {
      at: 10,
      notBeforeAt: 1200,
      extra: {
        changed: ['NotBefore'],
        updateSequence: 1,
        previous: {
          NotBefore: '',
          notBeforeUtc: iso(900),
          Resources: ['web_1'],
          DurationInSeconds: 5,
          Description: 'maintenance',
        },
      },
    }),
    record('approved', {
      at: 20,
      extra: {
        approval: {
          approvedAt: iso(20),
          rule: 'approve-freeze',
          leader: true,
          posted: true,
          dryRun: false,
          hooks: [{ name: 'drain', ok: true, exitCode: 0, durationMs: 12, timedOut: false }],
        },
      },
    }),
    record('approved', { at: 21, extra: { eventKnown: false, approval: { rule: 'r', dryRun: true } } }),
    record('canceled', { at: 30, extra: { inferred: false } }),
    record('completed', {
      vm: 'db_1',
      eventType: 'Redeploy',
      at: 40,
      durationInSeconds: -1,
      extra: {
        inferred: true,
        reason: 'host-rebooted',
        observedImpact: {
          expectedDurationSeconds: -1,
          hostRebooted: true,
          downtimeSeconds: 94,
          downtimeFrom: iso(1),
          downtimeTo: iso(95),
          longestStallMs: null,
          longestObservationGapMs: null,
        },
      },
    }),
    record('started', { vm: 'spot_1', eventType: 'Preempt', at: 50, startedAt: 50, scaleSet: 'spot' }),
    ...documentedRecords(),
  ];
}

/** A fresh deep copy of a good record. */
function good(): LifecycleRecord {
  return structuredClone(freezeLifecycle()[2]!);
}

/** Marks a field to delete in `withFields`. */
const REMOVE = Symbol('remove');

/** A good record with fields (dotted paths) set, or removed with REMOVE. */
function withFields(changes: Record<string, unknown>): Record<string, unknown> {
  const r = good() as unknown as Record<string, unknown>;
  for (const [path, value] of Object.entries(changes)) setAt(r, path.split('.'), value, value === REMOVE);
  return r;
}

function reasonOf(body: unknown): string {
  const result = parseRecord(body);
  if (!('error' in result)) throw new Error('accepted a hostile record');
  return result.error;
}

describe('parseRecord: good records', () => {
  const records = goodRecords();

  it('has the documented examples among its fixtures', () => {
    expect(documentedRecords().length).toBeGreaterThanOrEqual(7);
  });

  it.each(records.map((r, i) => [i, r.transition, r]))('accepts fixture %i (%s) unchanged', (_i, _t, r) => {
    const copy = structuredClone(r);
    expect(parseRecord(r)).toEqual({ record: copy });
    expect(parseRecord(JSON.stringify(r))).toEqual({ record: copy });
    expect(parseRecord(new TextEncoder().encode(JSON.stringify(r)))).toEqual({ record: copy });
    expect(parseRecord(Buffer.from(JSON.stringify(r)))).toEqual({ record: copy });
    expect(r).toEqual(copy); // the input is not modified
  });

  it('sets transition from type (the extension attribute is not trusted)', () => {
    const r = { ...good(), transition: 'scheduled' };
    const parsed = parseRecord(r);
    expect('record' in parsed && parsed.record.transition).toBe('completed');
  });

  it('keeps unknown fields', () => {
    const body = withFields({
      traceparent: '00-abc',
      'data.futureField': { nested: [1, 'two'] },
      'data.vm.osType': 'Linux',
    });
    expect(parseRecord(body)).toEqual({ record: body });
  });

  it('accepts what older versions may omit, folding to the same defaults as before', () => {
    const body = withFields({
      maintenancetype: REMOVE,
      vmid: REMOVE,
      datacontenttype: REMOVE,
      data: { vm: {}, timing: {} },
    });
    const parsed = parseRecord(body);
    if (!('record' in parsed)) throw new Error(parsed.error);
    expect(foldEvent([parsed.record])).toMatchObject({
      vmName: '',
      eventType: '',
      description: '',
      resources: [],
    });
  });

  it('accepts a body exactly at the size limit', () => {
    const base = JSON.stringify(good());
    const filler = 'x'.repeat(MAX_BODY_BYTES - Buffer.byteLength(base) - ',"pad":""'.length);
    const text = `${base.slice(0, -1)},"pad":"${filler}"}`;
    expect(Buffer.byteLength(text)).toBe(MAX_BODY_BYTES);
    expect('record' in parseRecord(text)).toBe(true);
    expect(reasonOf(`${base.slice(0, -1)},"pad":"${filler}x"}`)).toBe(
      `body: ${MAX_BODY_BYTES + 1} bytes of UTF-8, more than ${MAX_BODY_BYTES}`,
    );
  });
});

const deep = (levels: number): unknown => {
  let v: unknown = 'leaf';
  for (let i = 0; i < levels; i++) v = { a: v };
  return v;
};

describe('parseRecord: hostile records', () => {
  const hostile: Array<[string, unknown, string]> = [
    // object / array where a string belongs
    [
      'vm.name an object',
      withFields({ 'data.vm.name': { $gt: '' } }),
      'data.vm.name: expected a string, got an object',
    ],
    [
      'vm.name an array',
      withFields({ 'data.vm.name': ['a'] }),
      'data.vm.name: expected a string, got an array',
    ],
    [
      'vm.vmId a number',
      withFields({ 'data.vm.vmId': 7 }),
      'data.vm.vmId: expected a string, got a number (7)',
    ],
    [
      'vm.resourceId null',
      withFields({ 'data.vm.resourceId': null }),
      'data.vm.resourceId: expected a string, got null',
    ],
    [
      'EventType an array',
      withFields({ 'data.EventType': ['Freeze'] }),
      'data.EventType: expected a string, got an array',
    ],
    [
      'EventSource an object',
      withFields({ 'data.EventSource': {} }),
      'data.EventSource: expected a string, got an object',
    ],
    ['subject an object', withFields({ subject: { id: 'E1' } }), 'subject: expected a string, got an object'],
    ['subject missing', withFields({ subject: REMOVE }), 'subject: missing (expected a string)'],
    ['subject empty', withFields({ subject: '' }), 'subject: empty'],
    [
      'source an array',
      withFields({ source: ['/subscriptions/s'] }),
      'source: expected a string, got an array',
    ],
    ['source a number', withFields({ source: 1 }), 'source: expected a string, got a number (1)'],
    [
      'source too long',
      withFields({ source: `/${'s'.repeat(MAX_SOURCE_LENGTH)}` }),
      `source: longer than ${MAX_SOURCE_LENGTH} characters`,
    ],
    [
      'id too long',
      withFields({ id: 'i'.repeat(MAX_ID_LENGTH + 1) }),
      `id: longer than ${MAX_ID_LENGTH} characters`,
    ],
    ['id a boolean', withFields({ id: true }), 'id: expected a string, got a boolean'],
    ['vmid an object', withFields({ vmid: {} }), 'vmid: expected a string, got an object'],
    [
      'maintenancetype an array',
      withFields({ maintenancetype: [] }),
      'maintenancetype: expected a string, got an array',
    ],
    [
      'firstSeenStatus an array',
      withFields({ 'data.firstSeenStatus': ['x'] }),
      'data.firstSeenStatus: expected a string, got an array',
    ],
    ['reason an object', withFields({ 'data.reason': {} }), 'data.reason: expected a string, got an object'],
    [
      'notBeforeUtc an object',
      withFields({ 'data.notBeforeUtc': {} }),
      'data.notBeforeUtc: expected a string, got an object',
    ],
    [
      'notBeforeUtc not a time',
      withFields({ 'data.notBeforeUtc': 'soon' }),
      'data.notBeforeUtc: not a timestamp',
    ],
    // NUL characters (PostgreSQL text cannot store them), anywhere
    [
      'NUL in vm.name',
      withFields({ 'data.vm.name': 'web\u0000_1' }),
      'data.vm.name: contains a NUL character',
    ],
    ['NUL in source', withFields({ source: '/subscriptions/\u0000' }), 'source: contains a NUL character'],
    ['NUL in subject', withFields({ subject: 'E1\u0000' }), 'subject: contains a NUL character'],
    [
      'NUL in Description',
      withFields({ 'data.Description': '\u0000' }),
      'data.Description: contains a NUL character',
    ],
    [
      'NUL in a resource',
      withFields({ 'data.Resources': ['a', 'b\u0000'] }),
      'data.Resources[1]: contains a NUL character',
    ],
    [
      'NUL in an unknown field',
      withFields({ 'data.imdsExtra': { note: ['\u0000'] } }),
      'data.imdsExtra.note[0]: contains a NUL character',
    ],
    [
      'NUL in a key',
      withFields({ 'data.vm.a\u0000b': 1 }),
      'data.vm["a\\u0000b"] (its key): contains a NUL character',
    ],
    [
      'an unpaired surrogate',
      withFields({ 'data.vm.zone': '\ud800' }),
      'data.vm.zone: contains an unpaired surrogate (not valid Unicode)',
    ],
    // sizes
    [
      'a 1 MB Description',
      withFields({ 'data.Description': 'd'.repeat(1024 * 1024) }),
      `data.Description: longer than ${MAX_DESCRIPTION_LENGTH} characters`,
    ],
    [
      'too many Resources',
      withFields({ 'data.Resources': Array.from({ length: MAX_RESOURCES + 1 }, (_, i) => `${i}`) }),
      `data.Resources: more than ${MAX_RESOURCES} items`,
    ],
    [
      'a long resource name',
      withFields({ 'data.Resources': ['r'.repeat(257)] }),
      'data.Resources[0]: longer than 256 characters',
    ],
    [
      'Resources containing a number',
      withFields({ 'data.Resources': ['web_1', 42] }),
      'data.Resources[1]: expected a string, got a number (42)',
    ],
    [
      'Resources a string',
      withFields({ 'data.Resources': 'web_1' }),
      'data.Resources: expected an array, got a string',
    ],
    [
      'a long vm name',
      withFields({ 'data.vm.name': 'n'.repeat(257) }),
      'data.vm.name: longer than 256 characters',
    ],
    [
      'a long rule',
      withFields({ 'data.approval': { rule: 'n'.repeat(300) } }),
      'data.approval.rule: longer than 256 characters',
    ],
    [
      'nesting too deep',
      withFields({ 'data.imdsExtra': deep(50) }),
      `data.imdsExtra${'.a'.repeat(MAX_DEPTH - 2)}: nested deeper than ${MAX_DEPTH} levels`,
    ],
    // numbers
    ['occurrence 0', withFields({ 'data.occurrence': 0 }), 'data.occurrence: 0 is less than 1'],
    [
      'occurrence 1.5',
      withFields({ 'data.occurrence': 1.5 }),
      'data.occurrence: expected an integer, got a number (1.5)',
    ],
    [
      'occurrence 1e9',
      withFields({ 'data.occurrence': 1e9 }),
      'data.occurrence: 1000000000 is greater than 1000000',
    ],
    [
      'occurrence a string',
      withFields({ 'data.occurrence': '2' }),
      'data.occurrence: expected a number, got a string',
    ],
    [
      'DurationInSeconds 1e12',
      withFields({ 'data.DurationInSeconds': 1e12 }),
      'data.DurationInSeconds: 1000000000000 is greater than 10000000',
    ],
    [
      'DurationInSeconds -2',
      withFields({ 'data.DurationInSeconds': -2 }),
      'data.DurationInSeconds: -2 is less than -1',
    ],
    [
      'DurationInSeconds a string',
      withFields({ 'data.DurationInSeconds': '5' }),
      'data.DurationInSeconds: expected a number, got a string',
    ],
    [
      'DurationInSeconds 1e400 (JSON text)',
      JSON.stringify(good()).replace('"DurationInSeconds":5', '"DurationInSeconds":1e400'),
      'data.DurationInSeconds: expected a number, got non-finite Infinity',
    ],
    [
      'noticeSeconds -1e400 (JSON text)',
      JSON.stringify(good()).replace('"noticeSeconds":900', '"noticeSeconds":-1e400'),
      'data.timing.noticeSeconds: expected a number, got non-finite -Infinity',
    ],
    [
      'noticeSeconds a string',
      withFields({ 'data.timing.noticeSeconds': '900' }),
      'data.timing.noticeSeconds: expected a number, got a string',
    ],
    [
      'downtimeSeconds negative',
      withFields({ 'data.observedImpact.downtimeSeconds': -5 }),
      'data.observedImpact.downtimeSeconds: -5 is less than 0',
    ],
    [
      'longestStallMs an object',
      withFields({ 'data.observedImpact.longestStallMs': {} }),
      'data.observedImpact.longestStallMs: expected a number, got an object',
    ],
    // booleans, timestamps, structure
    [
      'hostRebooted a string',
      withFields({ 'data.observedImpact.hostRebooted': 'yes' }),
      'data.observedImpact.hostRebooted: expected a boolean, got a string',
    ],
    [
      'inferred a string',
      withFields({ 'data.inferred': 'false' }),
      'data.inferred: expected a boolean, got a string',
    ],
    [
      'affectsThisVm a number',
      withFields({ 'data.affectsThisVm': 1 }),
      'data.affectsThisVm: expected a boolean, got a number (1)',
    ],
    [
      'approval.posted a string',
      withFields({ 'data.approval': { posted: 'true' } }),
      'data.approval.posted: expected a boolean, got a string',
    ],
    [
      'approval.approvedAt not a time',
      withFields({ 'data.approval': { approvedAt: 'later' } }),
      'data.approval.approvedAt: not a timestamp',
    ],
    [
      'timing.startedAt an object',
      withFields({ 'data.timing.startedAt': {} }),
      'data.timing.startedAt: expected a string, got an object',
    ],
    ['time not a timestamp', withFields({ time: 'yesterday' }), 'time: not a timestamp'],
    [
      'time a number',
      withFields({ time: 1735689600000 }),
      'time: expected a string, got a number (1735689600000)',
    ],
    ['specversion 0.3', withFields({ specversion: '0.3' }), 'specversion: expected "1.0"'],
    ['specversion missing', withFields({ specversion: REMOVE }), 'specversion: expected "1.0"'],
    ['specversion a number', withFields({ specversion: 1 }), 'specversion: expected "1.0"'],
    ['an unknown type', withFields({ type: 'com.example.other' }), 'type: unknown type "com.example.other"'],
    [
      'an unknown transition',
      withFields({ type: `${RECORD_TYPE_PREFIX}.exploded` }),
      'type: unknown transition "exploded"',
    ],
    ['data missing', withFields({ data: REMOVE }), 'data: missing (expected an object)'],
    ['data.vm null', withFields({ 'data.vm': null }), 'data.vm: expected an object, got null'],
    [
      'data.timing an array',
      withFields({ 'data.timing': [] }),
      'data.timing: expected an object, got an array',
    ],
    [
      'observedImpact a string',
      withFields({ 'data.observedImpact': 'none' }),
      'data.observedImpact: expected an object, got a string',
    ],
    // bodies
    [
      'a body over 256 KiB',
      withFields({ 'data.padding': 'p'.repeat(300 * 1024) }),
      `body: ${Buffer.byteLength(JSON.stringify(good())) + 300 * 1024 + ',"padding":""'.length} bytes of UTF-8, more than ${MAX_BODY_BYTES}`,
    ],
    ['not JSON', '{"specversion":', 'body is not JSON'],
    ['an array', [good()], 'body is not an object'],
    ['null', null, 'body is not an object'],
    ['a JSON number', '42', 'body is not an object'],
    ['undefined', undefined, 'body is not an object'],
    ['a BigInt', withFields({ 'data.occurrence': 1n }), 'body is not serialisable as JSON'],
  ];

  it.each(hostile)('rejects %s naming the field', (_name, body, reason) => {
    expect(reasonOf(body)).toBe(reason);
  });

  it('keeps every reason under the length limit, even for long odd keys deep down', () => {
    let nested: Record<string, unknown> = { [`${'k'.repeat(500)}`]: '\u0000' };
    for (let i = 0; i < MAX_DEPTH - 3; i++) nested = { [`${'q'.repeat(100)}${i}`]: nested };
    const reason = reasonOf(withFields({ 'data.imdsExtra': nested }));
    expect(reason.length).toBeLessThanOrEqual(MAX_REASON_LENGTH);
    expect(reason.startsWith('data.imdsExtra[')).toBe(true);
    for (const [, body] of hostile) expect(reasonOf(body).length).toBeLessThan(MAX_REASON_LENGTH);
  });

  it('measures the size of the UTF-8 text, not the number of characters', () => {
    const body = withFields({ 'data.padding': '€'.repeat(100 * 1024) }); // 300 KiB in 100 Ki characters
    expect(JSON.stringify(body).length).toBeLessThan(MAX_BODY_BYTES);
    expect(reasonOf(body)).toMatch(/^body: \d+ bytes of UTF-8, more than 262144$/);
    expect(reasonOf(Buffer.from(JSON.stringify(body)))).toBe(reasonOf(body));
  });

  it('rejects huge text without parsing it, and deep JSON text without overflowing the stack', () => {
    const huge = `{"x":"${'x'.repeat(MAX_PARSE_BYTES)}"}`;
    expect(reasonOf(huge)).toBe(`body: ${MAX_PARSE_BYTES + 8} bytes of UTF-8, more than ${MAX_BODY_BYTES}`);
    const deepText = JSON.stringify(good()).replace(
      '"vm":{',
      `"extra":${'['.repeat(100_000)}${']'.repeat(100_000)},"vm":{`,
    );
    expect(reasonOf(deepText)).toMatch(/^data\.extra(\[0\])+: nested deeper than 32 levels$/);
  });

  it('rejects objects that cannot be JSON (cycles), and checks the JSON form of others', () => {
    const cyclic = good() as unknown as { data: Record<string, unknown> };
    cyclic.data.self = cyclic;
    expect(reasonOf(cyclic)).toBe('body is not serialisable as JSON');
    const withDate = withFields({ 'data.vm.name': new Date(0) });
    const parsed = parseRecord(withDate);
    expect('record' in parsed && parsed.record.data.vm.name).toBe('1970-01-01T00:00:00.000Z');
  });
});

/** Every column the store binds from a record or its fold has the type its SQL column expects. */
function expectStorable(r: LifecycleRecord, folded: FleetEvent): void {
  for (const column of [
    r.source,
    r.id,
    r.transition,
    r.subject,
    r.time,
    r.data.vm.name ?? '',
    r.data.vm.vmId || r.vmid || '',
    r.data.EventType ?? r.maintenancetype ?? '',
  ])
    expect(typeof column).toBe('string');
  expect(Number.isInteger(occurrenceOf(r))).toBe(true);
  for (const key of [
    'source',
    'eventId',
    'vmName',
    'vmId',
    'resourceId',
    'location',
    'zone',
    'scaleSet',
    'eventType',
    'description',
    'eventSource',
    'status',
    'firstSeenStatus',
    'firstSeenAt',
    'lastRecordAt',
  ] as const)
    expect(typeof folded[key], key).toBe('string');
  for (const key of [
    'notBefore',
    'startedAt',
    'endedAt',
    'reason',
    'approvedAt',
    'approvalRule',
    'approval',
  ] as const)
    expect(folded[key] === null || typeof folded[key] === 'string', key).toBe(true);
  for (const key of [
    'noticeSeconds',
    'advertisedSeconds',
    'downtimeSeconds',
    'longestStallMs',
    'observedSeconds',
  ] as const) {
    const v = folded[key];
    expect(v === null || (typeof v === 'number' && Number.isFinite(v)), key).toBe(true);
  }
  for (const key of ['inferred', 'hostRebooted'] as const)
    expect(folded[key] === null || typeof folded[key] === 'boolean', key).toBe(true);
  expect(Number.isInteger(folded.occurrence)).toBe(true);
  expect(folded.resources.every((s) => typeof s === 'string')).toBe(true);
}

type Path = Array<string | number>;

/** Every path into a value (objects and arrays), the root excluded. */
function pathsOf(value: unknown, prefix: Path = []): Path[] {
  if (typeof value !== 'object' || value === null) return [];
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v] as const) : Object.entries(value);
  return entries.flatMap(([k, v]) => [[...prefix, k], ...pathsOf(v, [...prefix, k])]);
}

function setAt(root: unknown, path: Path, value: unknown, remove: boolean): void {
  let at = root as Record<string | number, unknown>;
  for (const segment of path.slice(0, -1)) at = at[segment] as Record<string | number, unknown>;
  const last = path[path.length - 1]!;
  if (remove && !Array.isArray(at)) delete at[last];
  else at[last] = value;
}

const hostileValue = fc.oneof(
  fc.jsonValue(),
  fc.constantFrom(
    {},
    [],
    null,
    '',
    true,
    0,
    -1,
    1.5,
    1e12,
    -1e21,
    'a\u0000b',
    '\ud800',
    'not a time',
    '2025-01-01',
  ),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.integer().map((n) => 'x'.repeat(Math.abs(n) % 20_000)),
);

describe('parseRecord: properties', () => {
  const pool = goodRecords();
  const tmp = makeTempDir('sef-fleet-validate-');
  afterAll(() => tmp.cleanup());

  it('never throws on arbitrary values, text or bytes; reasons stay short', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.jsonValue(),
          fc.anything({ withBigInt: true, withDate: true, withMap: true, withNullPrototype: true }),
          fc.string(),
          fc.uint8Array({ maxLength: 200 }),
          fc.jsonValue().map((v) => JSON.stringify(v)),
        ),
        (value) => {
          const result = parseRecord(value);
          if ('error' in result) expect(result.error.length).toBeLessThanOrEqual(MAX_REASON_LENGTH);
          else expectStorable(result.record, foldEvent([result.record]));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('never throws on a good record with a random field replaced or removed; what it accepts folds and stores', async () => {
    const history = await openHistory({ database: join(tmp.dir, 'mutants.db') });
    let sequenceNumber = 0;
    let accepted = 0;
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.nat({ max: pool.length - 1 }),
          fc.nat(),
          hostileValue,
          fc.boolean(),
          fc.constantFrom('object', 'text', 'bytes'),
          async (which, where, value, remove, form) => {
            const body = structuredClone(pool[which]!) as unknown;
            const paths = pathsOf(body);
            setAt(body, paths[where % paths.length]!, value, remove);
            const text = JSON.stringify(body);
            const input = form === 'object' ? body : form === 'text' ? text : Buffer.from(text);
            const result = parseRecord(input);
            if ('error' in result) {
              expect(result.error.length).toBeLessThanOrEqual(MAX_REASON_LENGTH);
              return;
            }
            accepted++;
            // Folded alone and with the rest of a lifecycle (the fold sorts by time, transition and id too).
            expectStorable(result.record, foldEvent([result.record]));
            expectStorable(result.record, foldEvent([...pool.slice(0, 3), result.record]));
            const ingested = await history.ingest([
              { body: input, partitionId: '0', sequenceNumber: sequenceNumber++, enqueuedAt: new Date(0) },
            ]);
            expect(ingested.rejected).toBe(0); // the store's own parse agrees
          },
        ),
        { numRuns: 1000 },
      );
      expect(accepted).toBeGreaterThan(100); // the property exercised the accepting path too
    } finally {
      await history.close();
    }
  });

  it('a batch of hostile records and good ones ingests without throwing: the good ones are stored', async () => {
    const history: FleetHistory = await openHistory({ database: join(tmp.dir, 'batch.db') });
    try {
      const bodies = [
        ...freezeLifecycle('web_9', 'E9'),
        withFields({ 'data.vm.name': { $gt: '' } }),
        withFields({ 'data.EventType': ['Freeze'] }),
        withFields({ subject: 'E1\u0000' }),
        withFields({ 'data.occurrence': 1.5 }),
        withFields({ 'data.Description': 'd'.repeat(1024 * 1024) }),
      ];
      const result = await history.ingest(
        bodies.map((body, i) => ({ body, partitionId: '1', sequenceNumber: i, enqueuedAt: new Date(0) })),
      );
      expect(result).toMatchObject({ accepted: 3, rejected: 5 });
      expect(result.rejections).toEqual(
        [
          'data.vm.name: expected a string, got an object',
          'data.EventType: expected a string, got an array',
          'subject: contains a NUL character',
          'data.occurrence: expected an integer, got a number (1.5)',
          `data.Description: longer than ${MAX_DESCRIPTION_LENGTH} characters`,
        ].map((reason, i) => ({ index: 3 + i, reason })),
      );
    } finally {
      await history.close();
    }
  });
});
