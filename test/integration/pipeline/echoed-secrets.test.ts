/**
 * Receivers that echo credentials (issue 14 item 4): a real `run` process with every HTTP-speaking sink type
 * (webhook, slack, teams, otel http/protobuf, http/json and grpc) plus an exec command, each pointed at a
 * receiver that answers a failure quoting what it got — the bearer token without "Bearer ", the request URL,
 * the api-key header in the HTTP status line, URL userinfo, gRPC metadata — and an exec command that prints
 * the secrets it inherited in its environment. Secrets come from ${ENV} references. None of them may appear in
 * the captured logs, the SQLite database file or its WAL (the process is SIGKILLed, so the WAL stays),
 * `outbox status`, `deadletters list` (text and --json), /readyz or /metrics — while the echoes themselves
 * (with "[redacted]" in place of the secret) prove that the receivers did answer with them.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import { afterAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import { MAIN, REPO, spawnCli } from '../../support/child.ts';
import { startEventHubsDouble } from '../../support/event-hubs-double/index.ts';
import { type OtlpGrpcReceiver, startOtlpGrpcReceiver } from '../../support/otlp-receiver.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

const run = promisify(execFile);
const tmp = makeTempDir('sef-echo-');
const closers: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
  tmp.cleanup();
});

// Distinct, recognisable secret values (all configured through environment references).
const TOKEN = 'tok3n-EchoedBack-7f3a9c2e51d4';
const SLACK_TOKEN = 'SlackPathSecret0123456789AB';
const TEAMS_SIG = 'TeamsSigSecretQWERTY0123456789';
const OTEL_KEY = 'otlp-api-key-5b8e21c0ffee';
const OTEL_JSON_KEY = 'otlp-json-key-9d7c6b5a4e3f';
const OTEL_PASS = 'UserInfoPassw0rd-31337';
const GRPC_KEY = 'grpc-metadata-key-0a1b2c3d4e5f';
// A wrong Event Hubs key: the AMQP double refuses the SAS token it was signed with and quotes that token.
const EH_KEY = Buffer.from('wrong-event-hubs-key-0123456789').toString('base64');
const SECRETS = [TOKEN, SLACK_TOKEN, TEAMS_SIG, OTEL_KEY, OTEL_JSON_KEY, OTEL_PASS, GRPC_KEY, EH_KEY];
/** A SAS token's signature that is not redacted (the token is derived from the key: a credential too). */
const UNREDACTED_SAS = /SharedAccessSignature sr=|[?&]sig=(?!\[redacted\])/;

function leaked(text: string): string[] {
  const found = SECRETS.filter((s) => text.includes(s));
  if (UNREDACTED_SAS.test(text)) found.push(`SAS token: ${UNREDACTED_SAS.exec(text)![0]}`);
  return found;
}
function leakedBytes(bytes: Buffer): string[] {
  return SECRETS.filter((s) => bytes.includes(Buffer.from(s, 'utf8')));
}

/** An HTTP receiver that fails every request, quoting the credentials it received. */
async function startEchoReceiver(): Promise<{ url: string; server: Server; seen: string[] }> {
  const seen: string[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    req.resume();
    req.on('end', () => {
      const url = req.url ?? '';
      seen.push(url);
      const auth = req.headers.authorization ?? '';
      if (url.startsWith('/hook401')) {
        // The Authorization header minus "Bearer ", as a careless API gateway does.
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: `invalid token ${auth.replace(/^Bearer /, '')}` }));
      } else if (url.startsWith('/hook503')) {
        res.writeHead(503, { 'content-type': 'text/plain' });
        res.end(`overloaded; got authorization ${auth} for ${url}`);
      } else if (url.startsWith('/services/')) {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`rollup_error posting to ${url}`);
      } else if (url.startsWith('/workflows/')) {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`trigger failed for ${url} (sig ${new URL(url, 'http://x').searchParams.get('sig')})`);
      } else if (url.startsWith('/otlp-proto')) {
        // The api-key header echoed in the status line; the userinfo (sent as Basic auth, if at all) in the body.
        const basic = Buffer.from(auth.replace(/^Basic /, ''), 'base64').toString('utf8');
        res.writeHead(401, `invalid api-key ${String(req.headers['api-key'])}`, {
          'content-type': 'text/plain',
        });
        res.end(`denied ${auth} ${basic}`);
      } else if (url.startsWith('/otlp-json')) {
        res.writeHead(403, `forbidden for api-key ${String(req.headers['api-key'])}`, {
          'content-type': 'application/json',
        });
        res.end(
          JSON.stringify({ code: 7, message: `api-key ${String(req.headers['api-key'])} not allowed` }),
        );
      } else {
        res.writeHead(404).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, seen };
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function cli(args: string[], env: Record<string, string>): Promise<string> {
  const { stdout, stderr } = await run(process.execPath, [MAIN, ...args], {
    cwd: REPO,
    env: { ...process.env, ...env },
    timeout: 60_000,
  });
  return stdout + stderr;
}

describe('receivers that echo credentials', () => {
  it('never get a secret into logs, the database or its WAL, CLI output, /readyz or /metrics', async () => {
    const sim: RunningSimulator = await startSimulator({ timeScale: 0 });
    closers.push(() => sim.close());
    sim.admin.injectEvent({ type: 'Reboot', noticeSeconds: 600 });
    const echo = await startEchoReceiver();
    closers.push(
      () =>
        new Promise<void>((resolve) => {
          echo.server.closeAllConnections();
          echo.server.close(() => resolve());
        }),
    );
    const grpcReceiver: OtlpGrpcReceiver = await startOtlpGrpcReceiver();
    closers.push(() => grpcReceiver.close());
    // gRPC: UNAUTHENTICATED with details quoting the metadata we sent (scripted for every attempt).
    for (let i = 0; i < 20; i++) {
      grpcReceiver.enqueue({ code: grpc.status.UNAUTHENTICATED, details: `bad api-key ${GRPC_KEY}` });
    }

    const eventHubs = await startEventHubsDouble({ hubs: { lifecycle: 2 }, echoRejectedTokens: true });
    closers.push(() => eventHubs.close());
    const ehConnection = eventHubs
      .connectionString('lifecycle')
      .replace(`SharedAccessKey=${eventHubs.sasKey}`, `SharedAccessKey=${EH_KEY}`);

    const stateDir = join(tmp.dir, 'state');
    const telemetryPort = await freePort();
    const echoHost = new URL(echo.url).host;
    const env: Record<string, string> = {
      SEF_T_HOOK_URL: `${echo.url}/hook401`,
      SEF_T_HOOK503_URL: `${echo.url}/hook503`,
      SEF_T_AUTH: `Bearer ${TOKEN}`,
      SEF_T_SLACK_URL: `${echo.url}/services/T0000000/B0000000/${SLACK_TOKEN}`,
      SEF_T_TEAMS_URL: `${echo.url}/workflows/abc/triggers/manual/paths/invoke?api-version=2016-06-01&sv=1.0&sig=${TEAMS_SIG}`,
      SEF_T_OTEL_KEY: OTEL_KEY,
      SEF_T_OTEL_JSON_KEY: OTEL_JSON_KEY,
      SEF_T_GRPC_KEY: GRPC_KEY,
      SEF_T_EH: ehConnection,
    };
    const backoff =
      'delivery: { backoff: { initialMs: 100, maxMs: 300 }, probe: { initialMs: 100, maxMs: 300 } }';
    const configFile = join(tmp.dir, 'forwarder.yaml');
    writeFileSync(
      configFile,
      [
        `stateDir: ${JSON.stringify(stateDir)}`,
        `imds: { endpoint: ${JSON.stringify(sim.url)}, pollIntervalMs: 200 }`,
        `telemetry: { listen: { enabled: true, port: ${telemetryPort} } }`,
        'sinks:',
        `  - { name: hook-401, type: webhook, url: "\${SEF_T_HOOK_URL}", headers: { Authorization: "\${SEF_T_AUTH}" }, ${backoff} }`,
        `  - { name: hook-503, type: webhook, url: "\${SEF_T_HOOK503_URL}", headers: { Authorization: "\${SEF_T_AUTH}" }, ${backoff} }`,
        `  - { name: slack, type: slack, url: "\${SEF_T_SLACK_URL}", minIntervalMs: 0, filter: { scope: all }, ${backoff} }`,
        `  - { name: teams, type: teams, url: "\${SEF_T_TEAMS_URL}", minIntervalMs: 0, filter: { scope: all }, ${backoff} }`,
        `  - { name: otel-proto, type: otel, protocol: http/protobuf, endpoint: "http://collector:${OTEL_PASS}@${echoHost}/otlp-proto/v1/logs", headers: { api-key: "\${SEF_T_OTEL_KEY}" }, timeoutMs: 2000, ${backoff} }`,
        `  - { name: otel-json, type: otel, protocol: http/json, endpoint: "${echo.url}/otlp-json/v1/logs", headers: { api-key: "\${SEF_T_OTEL_JSON_KEY}" }, timeoutMs: 2000, ${backoff} }`,
        `  - { name: otel-grpc, type: otel, protocol: grpc, endpoint: "${grpcReceiver.url}", headers: { api-key: "\${SEF_T_GRPC_KEY}" }, timeoutMs: 2000, ${backoff} }`,
        `  - { name: eventhubs, type: eventhubs, connectionString: "\${SEF_T_EH}", retry: { maxRetries: 0 }, ${backoff} }`,
        `  - name: exec-env`,
        '    type: exec',
        `    command: ${JSON.stringify(process.execPath)}`,
        `    args: ["-e", "console.error('token=' + process.env.SEF_T_AUTH + ' slack ' + process.env.SEF_T_SLACK_URL + ' key ' + process.env.SEF_T_OTEL_KEY); process.exit(3)"]`,
        `    ${backoff}`,
        '',
      ].join('\n'),
    );

    const fwd = spawnCli(['run', '--config', configFile], env);
    closers.push(() => {
      if (fwd.child.exitCode === null && fwd.child.signalCode === null) fwd.child.kill('SIGKILL');
    });
    await fwd.ready;
    const telemetry = `http://127.0.0.1:${telemetryPort}`;
    type Ready = {
      sinks: Record<
        string,
        { state: string; lastError?: string; deadLettered: number; consecutiveFailures: number }
      >;
    };
    const readyz = async (): Promise<{ text: string; json: Ready }> => {
      const text = await (await fetch(`${telemetry}/readyz`)).text();
      return { text, json: JSON.parse(text) as Ready };
    };
    // Every sink failed at least twice: the retryable ones retry, the refused ones (401, 403, UNAUTHENTICATED,
    // Unauthorized: the destination refuses everything) are paused; each has a stored last error.
    const refused = ['hook-401', 'otel-proto', 'otel-json', 'otel-grpc', 'eventhubs'];
    await waitFor(
      async () => {
        const { json } = await readyz();
        const s = json.sinks;
        return (
          refused.every((n) => s[n]?.state === 'paused') &&
          [...refused, 'hook-503', 'slack', 'teams', 'exec-env'].every(
            (n) => (s[n]?.consecutiveFailures ?? 0) >= 2,
          )
        );
      },
      'every sink to have failed on the echoing receivers',
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    const ready = await readyz();
    const metrics = await (await fetch(`${telemetry}/metrics`)).text();
    fwd.child.kill('SIGKILL');
    await fwd.exited;

    // The receivers really were sent the credentials (so the echoes below are real).
    expect(echo.seen.some((u) => u.includes(SLACK_TOKEN))).toBe(true);
    expect(echo.seen.some((u) => u.includes(TEAMS_SIG))).toBe(true);

    const db = join(stateDir, 'forwarder.db');
    const wal = `${db}-wal`;
    expect(existsSync(wal)).toBe(true);
    const walBytes = readFileSync(wal);
    expect(walBytes.length).toBeGreaterThan(0);
    // The WAL does hold the stored errors (so checking it for secrets is meaningful).
    expect(walBytes.includes(Buffer.from('[redacted]'))).toBe(true);

    const storeArgs = ['--state-dir', stateDir];
    const outboxText = await cli(['outbox', 'status', ...storeArgs], {});
    const outboxJson = await cli(['outbox', 'status', '--json', ...storeArgs], {});
    const deadText = await cli(['deadletters', 'list', ...storeArgs], {});
    const deadJson = await cli(['deadletters', 'list', '--json', ...storeArgs], {});

    const logs = fwd.stderr();
    const sources: Record<string, string> = {
      logs,
      readyz: ready.text,
      metrics,
      outboxText,
      outboxJson,
      deadText,
      deadJson,
    };
    for (const [name, text] of Object.entries(sources)) expect(leaked(text), name).toEqual([]);
    expect(leakedBytes(readFileSync(db)), 'forwarder.db').toEqual([]);
    expect(leakedBytes(walBytes), 'forwarder.db-wal').toEqual([]);

    // The echoes arrived, with the secret cut out.
    const all = Object.values(sources).join('\n');
    expect(outboxText).toContain('invalid token [redacted]');
    expect(ready.json.sinks['otel-proto']!.lastError).toMatch(/HTTP 401/);
    expect(ready.json.sinks['otel-grpc']!.lastError).toMatch(/UNAUTHENTICATED/);
    expect(logs).toMatch(/sink paused: .*invalid token \[redacted\]/);
    expect(outboxText).toContain('last error');
    expect(all).toContain('token=[redacted]');
    expect(ready.json.sinks['hook-503']!.lastError).toContain('[redacted]');
    expect(ready.json.sinks.slack!.lastError).toContain('rollup_error');
    // The double did quote the token (so the Event Hubs error path really echoed a credential).
    expect(ready.json.sinks.eventhubs!.lastError).toMatch(
      /Unauthorized.*received token: SharedAccessSignature \[redacted\]/,
    );
  });
});
