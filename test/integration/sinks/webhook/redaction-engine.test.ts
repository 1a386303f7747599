/**
 * Secrets never leak: webhook URLs (their path and `sig=` query are credentials), signing secrets and header
 * values stay out of errors, logs (a captured pino logger), parsed config output and the store, while
 * the real DeliveryEngine + SQLite store + slack sink retry a failing-then-recovering server to delivery and
 * dead-letter a permanent failure with the service's error string.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DeliveryEngine } from '../../../../src/delivery/index.ts';
import { DeliveryError } from '../../../../src/sinks/types.ts';
import {
  createGenericWebhookSink,
  createSlackSink,
  createTeamsSink,
  slackOptionsSchema,
  teamsOptionsSchema,
  teamsSinkFactory,
  webhookOptionsSchema,
} from '../../../../src/sinks/webhook/index.ts';
import { openStore } from '../../../../src/store/index.ts';
import { HttpSinkServer } from '../../../support/http-sink-server.ts';
import { makeRecord } from '../../../support/records.ts';
import { capturingLogger, context, fakeClock, signal } from '../../../support/sink-tests.ts';
import { makeTempDir } from '../../../support/tmp.ts';
import { waitFor } from '../../../support/wait.ts';
import { SIGNING_SECRET } from './fixtures.ts';

const SLACK_PATH = '/services/T0SECRET1/B0SECRET2/XoXsEcReTtOkEnValue123';
const TEAMS_QUERY =
  '?api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=SiGsEcReTsAsKeY0123456789abcdef';
const HEADER_SECRET = 'Bearer hdr-secret-token-987654321';
const SECRET_KEY_PART = SIGNING_SECRET.slice('whsec_'.length);

let server: HttpSinkServer;
beforeAll(async () => {
  server = await HttpSinkServer.start();
});
afterAll(() => server.close());

function secretsIn(text: string): string[] {
  const found: string[] = [];
  for (const s of [
    SLACK_PATH,
    'XoXsEcReTtOkEnValue123',
    'SiGsEcReTsAsKeY0123456789abcdef',
    'hdr-secret-token-987654321',
    SECRET_KEY_PART,
  ]) {
    if (text.includes(s)) found.push(s);
  }
  return found;
}

function describeError(error: unknown): string {
  return [String(error), (error as Error).message, JSON.stringify(error), inspect(error, { depth: 5 })].join(
    '\n',
  );
}

describe('redaction', () => {
  it('errors, logs and parsed options never contain the URL credentials or keys', async () => {
    const { logger, output } = capturingLogger();
    const env = {
      SLACK_URL: server.url(SLACK_PATH),
      TEAMS_URL: server.url(`/workflows/abc/triggers/manual/paths/invoke${TEAMS_QUERY}`),
    };
    vi.stubEnv('SEF_TEST_SLACK_URL', env.SLACK_URL);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the config syntax for an environment reference
    const slackOptions = slackOptionsSchema().parse({ url: '${SEF_TEST_SLACK_URL}', minIntervalMs: 0 });
    vi.unstubAllEnvs();
    const teamsOptions = teamsOptionsSchema().parse({ url: env.TEAMS_URL, minIntervalMs: 0 });
    const genericOptions = webhookOptionsSchema().parse({
      url: server.url(SLACK_PATH),
      signingSecrets: [SIGNING_SECRET],
      headers: { Authorization: HEADER_SECRET },
    });
    const collected: string[] = [
      JSON.stringify({ slackOptions, teamsOptions, genericOptions }),
      inspect({ slackOptions, teamsOptions, genericOptions }, { depth: 5 }),
    ];
    // Each sink with what a hostile server could echo back of its own request: the URL, parts of it, headers.
    const sinks = [
      {
        sink: createSlackSink('alerts', slackOptions, context(logger), { clock: fakeClock() }),
        echoes: [env.SLACK_URL, SLACK_PATH, 'token XoXsEcReTtOkEnValue123 rejected'],
      },
      {
        sink: createTeamsSink('teams', teamsOptions, context(logger), { clock: fakeClock() }),
        echoes: [
          env.TEAMS_URL,
          TEAMS_QUERY,
          'sig=SiGsEcReTsAsKeY0123456789abcdef invalid',
          'SiGsEcReTsAsKeY0123456789abcdef',
        ],
      },
      {
        sink: createGenericWebhookSink('events', genericOptions, context(logger), { clock: fakeClock() }),
        echoes: [`authorization: ${HEADER_SECRET}`, `key ${SECRET_KEY_PART}`, server.url(SLACK_PATH)],
      },
    ];
    for (const { sink, echoes } of sinks) {
      const scripts = [
        ...echoes.flatMap((e) => [
          { status: 404, body: `no_service ${e}` },
          { status: 500, body: `error ${e}` },
        ]),
        { drop: true },
        { status: 302, headers: { location: server.url(SLACK_PATH) } },
      ];
      for (const scripted of scripts) {
        server.enqueue(scripted);
        const error = await sink.deliver([makeRecord('scheduled')], signal()).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(DeliveryError);
        collected.push(describeError(error));
      }
      await sink.close?.();
    }
    // The server did receive the secret URL (so the sinks really used it)…
    expect(server.requests.some((r) => r.url === SLACK_PATH)).toBe(true);
    // …but nothing we show to people does.
    const logs = output();
    expect(logs).toContain('no_service');
    expect(collected.join('\n')).toContain('HTTP 404 no_service');
    expect(secretsIn(collected.join('\n'))).toEqual([]);
    expect(secretsIn(logs)).toEqual([]);
  });

  it('warns clearly, without the URL, when a retired Office 365 connector URL is configured', () => {
    // The warning comes from the factory (config validate prints it, run logs it at start-up: configWarnings).
    const url = 'https://contoso.webhook.office.com/webhookb2/1111@2222/IncomingWebhook/SeCrEtPaRt42/3333';
    const warnings = teamsSinkFactory.warnings?.('legacy', teamsOptionsSchema().parse({ url })) ?? [];
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('retired Office 365 connector');
    expect(warnings[0]).toContain('contoso.webhook.office.com');
    expect(warnings[0]).not.toContain('SeCrEtPaRt42');
    const ok = teamsSinkFactory.warnings?.(
      'new',
      teamsOptionsSchema().parse({ url: server.url('/workflows/x') }),
    );
    expect(ok).toEqual([]);
  });
});

describe('DeliveryEngine + SQLite store + slack sink', () => {
  it('retries a failing-then-recovering server to delivery and dead-letters a permanent error without secrets', async () => {
    const tmp = makeTempDir('sef-webhook-engine-');
    const { logger, output } = capturingLogger();
    const store = openStore({ stateDir: tmp.dir, logger });
    const sink = createSlackSink(
      'alerts',
      slackOptionsSchema().parse({ url: server.url(SLACK_PATH), minIntervalMs: 0 }),
      context(logger),
    );
    const delivered: string[] = [];
    const retries: string[] = [];
    const dead: string[] = [];
    const engine = new DeliveryEngine({
      store,
      sinks: [{ sink, backoff: { initialMs: 20, maxMs: 50 } }],
      logger,
      rescanIntervalMs: 50,
      observer: {
        delivery: (e) => {
          if (e.type === 'delivered') delivered.push(...e.recordIds);
          else if (e.type === 'retry') retries.push(`${e.code} ${e.message}`);
          else if (e.type === 'deadLettered') dead.push(e.code ?? e.reason);
        },
      },
    });
    try {
      const before = server.requests.length;
      server.enqueue(
        { status: 503, body: 'busy' },
        { drop: true },
        { status: 429, body: 'rate_limited', headers: { 'retry-after': '0' } },
      );
      const first = makeRecord('scheduled');
      store.commit({ n: 1 }, [{ record: first, sinks: ['alerts'] }]);
      engine.start();
      engine.notify();
      await waitFor(
        () => delivered.includes(first.id),
        'the first record to be delivered after three failures',
      );
      expect(server.requests.length - before).toBe(4);
      expect(retries.map((r) => r.split(' ')[0])).toEqual(['http-503', 'network', 'http-429']);

      server.enqueue({ status: 400, body: 'invalid_blocks' }); // refuses this record (not the channel)
      const second = makeRecord('started');
      store.commit({ n: 2 }, [{ record: second, sinks: ['alerts'] }]);
      engine.notify();
      await waitFor(() => dead.length === 1, 'the second record to be dead-lettered');
      const rows = store.listDeadLetters({ sink: 'alerts' });
      expect(rows).toHaveLength(1);
      expect(rows[0]!.recordId).toBe(second.id);
      expect(rows[0]!.error).toContain('invalid_blocks');
      expect(rows[0]!.error).toContain('http://127.0.0.1:');
      const shown = JSON.stringify(rows) + retries.join('\n');
      expect(secretsIn(shown)).toEqual([]);
    } finally {
      await engine.stop();
      store.close();
    }
    // Every byte of the database (and WAL) and all logs: the URL credentials never appear.
    for (const file of readdirSync(tmp.dir)) {
      const bytes = readFileSync(join(tmp.dir, file)).toString('latin1');
      expect(secretsIn(bytes), file).toEqual([]);
    }
    expect(secretsIn(output())).toEqual([]);
    tmp.cleanup();
  });
});
