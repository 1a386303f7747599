/**
 * Who may use the fleet dashboard (src/fleet/dashboard/access.ts) over real HTTP on a real SQLite history:
 * no credential → 401 with WWW-Authenticate, a wrong one → 401, the right one → 200 (bearer token and HTTP Basic),
 * /metrics behind the credential, /healthz and /readyz open, a foreign Host → 421 (DNS rebinding), loopback
 * without a credential still open. A non-loopback bind without a credential is refused before binding (the
 * config, startDashboard, startFleet, and the `fleet dashboard` CLI), naming `dashboard.auth` and `--host`.
 * A `fleet dashboard` child with --auth-token-env never prints the token, whatever the requests.
 *
 * Nothing here binds a non-loopback address (the refusals happen before listening): every server is on
 * 127.0.0.1.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { request } from 'node:http';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadFleetConfig } from '../../../src/fleet/config.ts';
import { DashboardAccessError } from '../../../src/fleet/dashboard/access.ts';
import { type RunningDashboard, startDashboard } from '../../../src/fleet/dashboard/server.ts';
import { type FleetHistory, openHistory } from '../../../src/fleet/history/index.ts';
import { startFleet } from '../../../src/fleet/index.ts';
import { createFleetMetrics } from '../../../src/fleet/metrics.ts';
import { silentLogger } from '../../../src/log.ts';
import { Secret } from '../../../src/secret.ts';
import { MAIN, REPO } from '../../support/child.ts';
import { freezeLifecycle } from '../../support/fleet-records.ts';
import { makeTempDir } from '../../support/tmp.ts';

const TOKEN = 'fleet-dashboard-token-7c1e9a4b';
const PASSWORD = 'basic-password-5d2f';

const tmp = makeTempDir('sef-dashboard-access-');
const database = join(tmp.dir, 'fleet.db');
let history: FleetHistory;
const cleanups: Array<() => Promise<void> | void> = [];

beforeAll(async () => {
  history = await openHistory({ database });
  await history.ingest(
    freezeLifecycle('web_1', 'E1').map((body, i) => ({
      body,
      partitionId: '0',
      sequenceNumber: i,
      enqueuedAt: new Date(0),
    })),
  );
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(async () => {
  await history.close();
  tmp.cleanup();
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** GET with exact headers (Host included: fetch cannot set it), always to 127.0.0.1. */
async function get(url: string, headers: Record<string, string> = {}): Promise<Answer> {
  const u = new URL(url);
  const req = request({ host: '127.0.0.1', port: u.port, path: `${u.pathname}${u.search}`, headers });
  req.end();
  const [res] = (await once(req, 'response')) as [import('node:http').IncomingMessage];
  let body = '';
  res.setEncoding('utf8');
  for await (const chunk of res) body += chunk;
  return { status: res.statusCode ?? 0, headers: res.headers, body };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const basic = (user: string, password: string) => ({
  authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
});

async function serve(options: Partial<Parameters<typeof startDashboard>[0]> = {}): Promise<RunningDashboard> {
  const metrics = createFleetMetrics({
    history,
    blastRadiusThreshold: 10,
    logger: silentLogger(),
    processMetrics: false,
  });
  const dashboard = await startDashboard({
    history,
    logger: silentLogger(),
    metrics: metrics.registry,
    ...options,
  });
  cleanups.push(() => dashboard.close());
  return dashboard;
}

describe('dashboard access', () => {
  it('bearer token: 401 without or with a wrong token, 200 with it; probes open', async () => {
    const d = await serve({ access: { auth: { bearerToken: new Secret(TOKEN, 'test') } } });
    for (const path of ['/', '/api/summary', '/api/export.csv', '/metrics']) {
      const none = await get(`${d.url}${path}`);
      expect(none.status, path).toBe(401);
      expect(none.headers['www-authenticate']).toBe('Bearer realm="fleet"');
      expect(none.body).not.toContain(TOKEN);
      const wrong = await get(`${d.url}${path}`, bearer(`${TOKEN}x`));
      expect(wrong.status, path).toBe(401);
      expect(wrong.headers['www-authenticate']).toMatch(/^Bearer realm="fleet", error="invalid_token"$/);
      expect((await get(`${d.url}${path}`, bearer('short'))).status, path).toBe(401);
      expect((await get(`${d.url}${path}`, basic('x', TOKEN))).status, path).toBe(401);
      const right = await get(`${d.url}${path}`, bearer(TOKEN));
      expect(right.status, path).toBe(200);
    }
    // The page keeps its Content-Security-Policy behind the credential.
    const page = await get(`${d.url}/`, bearer(TOKEN));
    expect(page.headers['content-security-policy']).toMatch(/default-src 'self'/);
    expect((await get(`${d.url}/metrics`, bearer(TOKEN))).body).toContain('sef_fleet_pending_events');
    // Probes need neither the credential nor a known Host.
    expect((await get(`${d.url}/healthz`, { host: 'probe.internal' })).status).toBe(200);
    const ready = await get(`${d.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.body)).toMatchObject({ ready: true });
    // Read-only: other methods are refused.
    const post = await new Promise<number>((resolve, reject) => {
      const u = new URL(d.url);
      const req = request({
        host: '127.0.0.1',
        port: u.port,
        path: '/api/summary',
        method: 'POST',
        headers: bearer(TOKEN),
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
    expect(post).toBe(405);
  });

  it('HTTP Basic: a wrong user name or password is a 401, the pair a 200', async () => {
    const d = await serve({
      access: { auth: { basic: { username: 'ops', password: new Secret(PASSWORD, 'test') } } },
    });
    const none = await get(`${d.url}/api/summary`);
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Basic realm="fleet", charset="UTF-8"');
    expect((await get(`${d.url}/api/summary`, basic('ops', 'nope'))).status).toBe(401);
    expect((await get(`${d.url}/api/summary`, basic('root', PASSWORD))).status).toBe(401);
    expect((await get(`${d.url}/api/summary`, bearer(PASSWORD))).status).toBe(401);
    expect((await get(`${d.url}/api/summary`, { authorization: 'Basic !!!' })).status).toBe(401);
    const right = await get(`${d.url}/api/summary`, basic('ops', PASSWORD));
    expect(right.status).toBe(200);
    expect(JSON.parse(right.body)).toMatchObject({ events: 1 });
    expect((await get(`${d.url}/metrics`, basic('ops', PASSWORD))).status).toBe(200);
  });

  it('answers only for its own names in Host: another is a 421 (DNS rebinding)', async () => {
    const d = await serve({ access: { allowedHosts: ['fleet.example.com'] } });
    const port = new URL(d.url).port;
    for (const host of ['evil.example', `evil.example:${port}`, `127.0.0.1.nip.io:${port}`, 'localhost:1']) {
      const answer = await get(`${d.url}/api/summary`, { host });
      expect(answer.status, host).toBe(421);
      expect(await get(`${d.url}/metrics`, { host }).then((a) => a.status), host).toBe(421);
    }
    for (const host of [
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      `LOCALHOST:${port}`,
      `[::1]:${port}`,
      'fleet.example.com',
      'fleet.example.com:443',
    ])
      expect((await get(`${d.url}/api/summary`, { host })).status, host).toBe(200);
  });

  it('on loopback without a credential: open (the default)', async () => {
    const d = await serve();
    expect((await get(`${d.url}/api/summary`)).status).toBe(200);
    expect((await get(`${d.url}/metrics`)).status).toBe(200);
    expect((await get(`${d.url}/`)).status).toBe(200);
  });

  it('refuses a non-loopback bind without a credential, naming dashboard.auth and --host (before binding)', async () => {
    const env = {
      EH: 'Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=a;EntityPath=h',
      BLOB: 'UseDevelopmentStorage=true',
    };
    const overrides = (dashboard: Record<string, unknown>) => ({
      eventHubs: { connectionString: { env: 'EH' } },
      checkpoints: { connectionString: { env: 'BLOB' } },
      database,
      dashboard,
    });
    expect(() => loadFleetConfig({ overrides: overrides({ host: '0.0.0.0' }), env })).toThrow(
      /dashboard\.auth: .*0\.0\.0\.0.*dashboard\.auth.*--host/s,
    );
    // With a credential, or with the dashboard off, or on loopback, the config is valid.
    expect(
      loadFleetConfig({
        overrides: overrides({ host: '0.0.0.0', auth: { bearerToken: { env: 'TOKEN' } } }),
        env: { ...env, TOKEN },
      }).dashboard.auth,
    ).toEqual({ bearerToken: expect.any(Secret) });
    expect(
      loadFleetConfig({ overrides: overrides({ host: '0.0.0.0', enabled: false }), env }).dashboard.host,
    ).toBe('0.0.0.0');
    expect(loadFleetConfig({ overrides: overrides({ host: '::1' }), env }).dashboard.auth).toBeUndefined();
    expect(() =>
      loadFleetConfig({
        overrides: overrides({ auth: { bearerToken: 'a', basic: { username: 'u', password: 'p' } } }),
        env,
      }),
    ).toThrow(/dashboard\.auth: give exactly one of bearerToken or basic/);

    // startDashboard refuses before listening (nothing is bound).
    await expect(
      startDashboard({ history, host: '0.0.0.0', port: 0, logger: silentLogger() }),
    ).rejects.toThrow(DashboardAccessError);
    await expect(
      startDashboard({ history, host: '10.1.2.3', port: 0, logger: silentLogger() }),
    ).rejects.toThrow(/dashboard\.auth.*--host/s);
    // startFleet refuses before opening the history or connecting to the hub.
    const config = loadFleetConfig({ overrides: overrides({}), env });
    config.dashboard.host = '0.0.0.0';
    await expect(startFleet(config, silentLogger())).rejects.toThrow(/dashboard\.auth.*--host/s);

    // The CLI: a usage error naming the setting and the option.
    const cli = await run(['fleet', 'dashboard', '--database', database, '--host', '0.0.0.0', '--port', '0']);
    expect(cli.code).toBe(2);
    expect(cli.stderr).toMatch(/dashboard\.auth/);
    expect(cli.stderr).toMatch(/--host/);
    expect(cli.stdout).toBe('');
    const runCli = await run(
      [
        'fleet',
        'run',
        '--connection-string-env',
        'EH',
        '--checkpoint-connection-string-env',
        'BLOB',
        '--database',
        database,
        '--host',
        '0.0.0.0',
      ],
      env,
    );
    expect(runCli.code).toBe(2);
    expect(runCli.stderr).toMatch(/dashboard\.auth: the dashboard listens on 0\.0\.0\.0.*--host/s);
    expect(runCli.stdout).toBe('');
  });

  it('`fleet dashboard --auth-token-env`: the token works and never appears in any output', async () => {
    const child: ChildProcess = spawn(
      process.execPath,
      [
        MAIN,
        'fleet',
        'dashboard',
        '--database',
        database,
        '--port',
        '0',
        '--auth-token-env',
        'SEF_DASH_TOKEN',
        '--log-level',
        'trace',
      ],
      { cwd: REPO, env: { ...process.env, SEF_DASH_TOKEN: TOKEN }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    const exited = once(child, 'exit');
    cleanups.push(async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
    });
    const line = await new Promise<string>((resolve, reject) => {
      const lines = createInterface({ input: child.stdout! });
      lines.once('line', (l) => {
        stdout += `${l}\n`;
        resolve(l);
      });
      void exited.then(() => reject(new Error(`fleet dashboard exited before ready: ${stderr}`)));
    });
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    const url = (JSON.parse(line) as { dashboard: string }).dashboard;
    expect((await get(`${url}/api/summary`)).status).toBe(401);
    expect((await get(`${url}/api/summary`, bearer(`${TOKEN}-wrong`))).status).toBe(401);
    expect((await get(`${url}/api/summary`, bearer(TOKEN))).status).toBe(200);
    expect((await get(`${url}/metrics`, bearer(TOKEN))).status).toBe(200);
    expect((await get(`${url}/api/summary`, { ...bearer(TOKEN), host: 'evil.example' })).status).toBe(421);
    expect((await get(`${url}/api/event?id=${TOKEN}`, bearer(TOKEN))).status).toBe(404);
    expect((await get(`${url}/readyz`)).status).toBe(200);
    child.kill('SIGTERM');
    const [code] = (await exited) as [number | null];
    expect(code).toBe(0);
    expect(stderr).toContain('dashboard request without a valid credential');
    expect(stdout).not.toContain(TOKEN);
    expect(stderr).not.toContain(TOKEN);
  });
});

async function run(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [MAIN, ...args], {
    cwd: REPO,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, stdout, stderr };
}
