/**
 * Payload snapshots per transition and format, as received by a real HTTP server on 127.0.0.1: Slack Block
 * Kit, Teams Adaptive Card envelope, generic CloudEvents (structured and binary) with Standard Webhooks
 * headers. Fixed records and a fixed clock make every byte deterministic.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LifecycleRecord, Transition } from '../../../../src/domain/index.ts';
import {
  createGenericWebhookSink,
  createSlackSink,
  createTeamsSink,
  slackOptionsSchema,
  teamsOptionsSchema,
  webhookOptionsSchema,
} from '../../../../src/sinks/webhook/index.ts';
import { HttpSinkServer } from '../../../support/http-sink-server.ts';
import { makeRecord } from '../../../support/records.ts';
import { context, fakeClock, signal } from '../../../support/sink-tests.ts';
import { ALL_TRANSITIONS, SIGNING_SECRET } from './fixtures.ts';

/**
 * When each transition is observed: spread over the event's life (NotBefore 18:29:47) so the messages show
 * "in 14 min", "in 10 min", "now", "1 min ago" and, once the event started, no NotBefore at all.
 */
const NOT_BEFORE = 'Fri, 19 Sep 2025 18:29:47 GMT';
const OBSERVED: Record<Transition, string> = {
  scheduled: '2025-09-19T18:15:47.000Z',
  canceled: '2025-09-19T18:20:00.000Z',
  approved: '2025-09-19T18:29:50.000Z',
  updated: '2025-09-19T18:31:12.000Z',
  started: '2025-09-19T18:29:50.000Z',
  completed: '2025-09-19T18:31:12.000Z',
};

function payloadRecord(transition: Transition): LifecycleRecord {
  return makeRecord(transition, { time: OBSERVED[transition], notBefore: NOT_BEFORE });
}

let server: HttpSinkServer;
beforeAll(async () => {
  server = await HttpSinkServer.start({ status: 200, body: 'ok' });
});
afterAll(() => server.close());

async function deliverOne(
  kind: 'slack' | 'teams' | 'structured' | 'binary',
  transition: (typeof ALL_TRANSITIONS)[number],
) {
  const clock = fakeClock();
  const deps = { clock };
  const url = server.url(`/${kind}/${transition}`);
  const sink =
    kind === 'slack'
      ? createSlackSink('s', slackOptionsSchema().parse({ url, minIntervalMs: 0 }), context(), deps)
      : kind === 'teams'
        ? createTeamsSink('t', teamsOptionsSchema().parse({ url, minIntervalMs: 0 }), context(), deps)
        : createGenericWebhookSink(
            'g',
            webhookOptionsSchema().parse({
              url,
              mode: kind,
              signingSecrets: [SIGNING_SECRET],
              headers: { 'x-team': 'ops' },
            }),
            context(),
            deps,
          );
  const before = server.requests.length;
  await sink.deliver([payloadRecord(transition)], signal());
  await sink.close?.();
  const request = server.requests[before]!;
  expect(request.url).toBe(`/${kind}/${transition}`);
  return request;
}

describe('payload snapshots', () => {
  for (const transition of ALL_TRANSITIONS) {
    it(`slack ${transition}`, async () => {
      const request = await deliverOne('slack', transition);
      expect(request.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(JSON.parse(request.body)).toMatchSnapshot();
    });

    it(`teams ${transition}`, async () => {
      const request = await deliverOne('teams', transition);
      expect(request.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(JSON.parse(request.body)).toMatchSnapshot();
    });

    it(`generic structured ${transition}`, async () => {
      const request = await deliverOne('structured', transition);
      const record = payloadRecord(transition);
      expect(request.body).toBe(JSON.stringify(record));
      expect(request.headers['content-type']).toBe('application/cloudevents+json; charset=utf-8');
      expect(request.headers['webhook-id']).toBe(record.id);
      expect({
        'webhook-id': request.headers['webhook-id'],
        'webhook-timestamp': request.headers['webhook-timestamp'],
        'webhook-signature': request.headers['webhook-signature'],
        'x-team': request.headers['x-team'],
      }).toMatchSnapshot();
    });

    it(`generic binary ${transition}`, async () => {
      const request = await deliverOne('binary', transition);
      const record = payloadRecord(transition);
      expect(JSON.parse(request.body)).toEqual(record.data);
      const ce = Object.fromEntries(
        Object.entries(request.headers).filter(
          ([k]) => k.startsWith('ce-') || k === 'content-type' || k.startsWith('webhook-'),
        ),
      );
      expect(ce['ce-id']).toBe(record.id);
      expect(ce).toMatchSnapshot();
    });
  }
});
