/**
 * docker-compose.yml is validated, not run (no container engine here): it parses, every file it mounts or
 * builds from exists, the forwarder's config passes the real schema with the compose environment (and every
 * sink can be constructed from it), and hosts, ports, hub names and paths agree across the services, the
 * forwarder config, the Event Hubs emulator config, the collector config and the Dockerfile.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { parseEventHubConnectionString } from '@azure/event-hubs';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Config, loadConfig } from '../../../src/config/index.ts';
import { loadFleetConfig } from '../../../src/fleet/config.ts';
import { silentLogger } from '../../../src/log.ts';
import { defaultStateDir } from '../../../src/platform.ts';
import { loadScenario } from '../../../src/simulator/index.ts';
import { findSinkFactory } from '../../../src/sinks/registry.ts';
import {
  argValue,
  type ComposeFile,
  type ComposeService,
  dependsOn,
  interpolations,
  parseDockerfile,
  parsePort,
  parseVolume,
  parseYamlStrict,
  REPO,
  readCompose,
} from './compose-files.ts';

const FORWARDER_CONFIG_TARGET = '/etc/scheduled-events-forwarder/forwarder.yaml';
const EMULATOR_CONFIG_TARGET = '/Eventhubs_Emulator/ConfigFiles/Config.json';
const EMULATOR_AMQP_PORT = 5672;

let compose: ComposeFile;

/** The service with this image prefix (exactly one). */
function serviceByImage(prefix: string): [string, ComposeService] {
  const matches = Object.entries(compose.services).filter(([, s]) => s.image?.startsWith(prefix));
  expect(
    matches.map(([name]) => name),
    `one service runs ${prefix}`,
  ).toHaveLength(1);
  return matches[0]!;
}

/** The service built from the Dockerfile whose command starts with `subcommand`. */
function forwarderService(subcommand: string): [string, ComposeService] {
  const matches = Object.entries(compose.services).filter(
    ([, s]) => s.build !== undefined && s.command?.[0] === subcommand,
  );
  expect(
    matches.map(([name]) => name),
    `one service runs "${subcommand}"`,
  ).toHaveLength(1);
  return matches[0]!;
}

/** The repository file bind-mounted at `target` in `service`. */
function mountedFile(service: ComposeService, target: string): string {
  const mount = (service.volumes ?? []).map(parseVolume).find((v) => v.target === target);
  expect(mount, `a volume is mounted at ${target}`).toBeDefined();
  expect(mount!.bind).toBe(true);
  return join(REPO, mount!.source);
}

function hostOf(url: string): { host: string; port: number } {
  const u = new URL(url);
  const port = u.port === '' ? (u.protocol === 'https:' ? 443 : 80) : Number(u.port);
  return { host: u.hostname, port };
}

beforeAll(() => {
  compose = readCompose();
});

afterEach(() => {
  vi.unstubAllEnvs();
});

/**
 * The image has neither Node.js nor curl, so a healthcheck is a bash /dev/tcp probe. Checks it targets
 * 127.0.0.1:`port`, then runs it for real (bash) against a local server on another port that answers 200 only on
 * `path`: true when the probe passes there and fails for a 503.
 */
async function probe(test: string[], port: string, path: string): Promise<boolean> {
  expect(test.slice(0, 3)).toEqual(['CMD', 'bash', '-c']);
  const script = test[3]!;
  expect(script).toContain(`/dev/tcp/127.0.0.1/${port} `);
  let status = 200;
  const server = createServer((req, res) => {
    res.writeHead(req.url === path ? status : 404).end();
  }).listen(0, '127.0.0.1');
  await once(server, 'listening');
  const local = (server.address() as AddressInfo).port;
  const run = async () => {
    const child = spawn('bash', [
      '-c',
      script.replace(`/dev/tcp/127.0.0.1/${port} `, `/dev/tcp/127.0.0.1/${local} `),
    ]);
    const [code] = await once(child, 'exit');
    return code === 0;
  };
  try {
    const healthy = await run();
    status = 503;
    const unhealthyFails = !(await run());
    return healthy && unhealthyFails;
  } finally {
    server.close();
  }
}

describe('docker-compose.yml structure', () => {
  it('parses as YAML with the services the stack needs', () => {
    expect(Object.keys(compose.services).sort()).toEqual(
      expect.arrayContaining(['forwarder', 'imds-simulator', 'eventhubs-emulator', 'azurite']),
    );
    serviceByImage('mcr.microsoft.com/azure-messaging/eventhubs-emulator');
    serviceByImage('mcr.microsoft.com/azure-storage/azurite');
    serviceByImage('otel/opentelemetry-collector-contrib');
    serviceByImage('mendhak/http-https-echo');
    forwarderService('run');
    forwarderService('simulate');
  });

  it('mounts only files that exist, and declares every named volume', () => {
    const declared = Object.keys(compose.volumes ?? {});
    for (const [name, service] of Object.entries(compose.services)) {
      for (const mount of (service.volumes ?? []).map(parseVolume)) {
        if (mount.bind) {
          expect(existsSync(join(REPO, mount.source)), `${name}: ${mount.source} exists`).toBe(true);
          expect(mount.readOnly, `${name}: ${mount.source} is mounted read-only`).toBe(true);
        } else {
          expect(declared, `${name}: named volume ${mount.source} is declared`).toContain(mount.source);
        }
      }
    }
  });

  it('builds from files that exist and depends only on services that exist', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      if (service.build !== undefined) {
        const context = join(REPO, service.build.context);
        expect(statSync(context).isDirectory(), `${name}: build context`).toBe(true);
        expect(existsSync(join(context, service.build.dockerfile ?? 'Dockerfile'))).toBe(true);
      } else {
        expect(service.image, `${name} has an image or a build`).toMatch(/^[\w./-]+:[\w.-]+$/);
      }
      for (const dep of dependsOn(service)) expect(Object.keys(compose.services)).toContain(dep);
    }
  });

  it('interpolates only ACCEPT_EULA, and refuses to start without it (the emulator licence)', () => {
    const vars = interpolations(compose);
    expect(vars.map((v) => v.name)).toEqual(['ACCEPT_EULA']);
    expect(vars[0]!.modifier.startsWith(':?')).toBe(true);
    const [, emulator] = serviceByImage('mcr.microsoft.com/azure-messaging/eventhubs-emulator');
    expect(emulator.environment?.ACCEPT_EULA).toMatch(/^\$\{ACCEPT_EULA:\?/);
  });

  it('publishes ports on the host loopback only', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      for (const port of (service.ports ?? []).map(parsePort)) {
        expect(port.hostIp, `${name} publishes ${port.published} on 127.0.0.1`).toBe('127.0.0.1');
      }
    }
  });
});

describe('the IMDS simulator service', () => {
  it('plays a scenario file that exists and is valid, on all interfaces of its container', () => {
    const [, sim] = forwarderService('simulate');
    const args = sim.command!;
    expect(argValue(args, '--host')).toBe('0.0.0.0');
    expect(Number(argValue(args, '--port'))).toBeGreaterThan(0);
    expect(Number(argValue(args, '--time-scale'))).toBeGreaterThan(0);
    const scenarioFile = mountedFile(sim, argValue(args, '--scenario')!);
    const scenario = loadScenario(scenarioFile);
    expect(scenario.steps.length).toBeGreaterThan(0);
    expect(scenario.primaryVm).toBeDefined();
  });

  it('has a healthcheck on its own port that the forwarder waits for', async () => {
    const [simName, sim] = forwarderService('simulate');
    const port = argValue(sim.command!, '--port')!;
    expect(await probe(sim.healthcheck!.test, port, '/admin/scenario')).toBe(true);
    const [, fwd] = forwarderService('run');
    expect(fwd.depends_on).toMatchObject({ [simName]: { condition: 'service_healthy' } });
  });
});

describe('the forwarder service and config/compose/forwarder.yaml', () => {
  let config: Config;
  let fwd: ComposeService;

  beforeAll(() => {
    [, fwd] = forwarderService('run');
  });

  /** Loads the mounted config with the service's environment, as the container would. */
  function loadWithComposeEnv(): Config {
    for (const [key, value] of Object.entries(fwd.environment ?? {})) vi.stubEnv(key, value);
    const file = mountedFile(fwd, argValue(fwd.command!, '--config')!);
    return loadConfig({ file, env: fwd.environment ?? {} });
  }

  it('runs the config file mounted at the path its command names', () => {
    expect(argValue(fwd.command!, '--config')).toBe(FORWARDER_CONFIG_TARGET);
    expect(mountedFile(fwd, FORWARDER_CONFIG_TARGET)).toBe(join(REPO, 'config', 'compose', 'forwarder.yaml'));
  });

  it('validates with the real schema using the compose environment, and every sink can be built', async () => {
    config = loadWithComposeEnv();
    expect(config.sinks.map((s) => s.type).sort()).toEqual(['eventhubs', 'otel', 'stdout', 'webhook']);
    for (const sink of config.sinks) {
      const factory = findSinkFactory(sink.type)!;
      const built = await factory.create(sink.name, sink.options as never, {
        logger: silentLogger(),
        vm: () => undefined,
        stateDir: config.stateDir,
      });
      expect(built.name).toBe(sink.name);
      await built.close?.();
    }
  });

  it('fails validation without the compose environment (the secrets really come from it)', () => {
    const file = join(REPO, 'config', 'compose', 'forwarder.yaml');
    for (const key of Object.keys(fwd.environment ?? {})) vi.stubEnv(key, '');
    expect(() => loadConfig({ file })).toThrow(/SEF_EVENTHUBS_CONNECTION_STRING/);
  });

  it('polls the simulator service on the port it listens on', () => {
    config = loadWithComposeEnv();
    const [simName, sim] = forwarderService('simulate');
    const { host, port } = hostOf(config.imds.endpoint);
    expect(host).toBe(simName);
    expect(port).toBe(Number(argValue(sim.command!, '--port')));
  });

  it('keeps its state on the named volume at the image state directory', () => {
    config = loadWithComposeEnv();
    const state = (fwd.volumes ?? []).map(parseVolume).find((v) => v.target === config.stateDir);
    expect(state?.bind).toBe(false);
    const dockerfile = parseDockerfile(readFileSync(join(REPO, 'Dockerfile'), 'utf8'));
    expect(dockerfile.find((i) => i.keyword === 'VOLUME')?.args).toContain(config.stateDir);
  });

  it('serves health on the published port that its healthcheck probes', async () => {
    config = loadWithComposeEnv();
    expect(config.telemetry.listen.enabled).toBe(true);
    expect(config.telemetry.listen.host).toBe('0.0.0.0');
    const ports = (fwd.ports ?? []).map(parsePort);
    expect(ports.map((p) => p.container)).toContain(config.telemetry.listen.port);
    expect(await probe(fwd.healthcheck!.test, String(config.telemetry.listen.port), '/readyz')).toBe(true);
  });

  it('sends to the Event Hubs emulator service, to a hub its config defines, over plain AMQP', () => {
    config = loadWithComposeEnv();
    const sink = config.sinks.find((s) => s.type === 'eventhubs')!;
    const secret = sink.options.connectionString as { reveal(): string };
    const parsed = parseEventHubConnectionString(secret.reveal());
    expect(secret.reveal()).toMatch(/;UseDevelopmentEmulator=true;?$/);
    const [emulatorName, emulator] = serviceByImage('mcr.microsoft.com/azure-messaging/eventhubs-emulator');
    const endpoint = new URL(parsed.endpoint);
    expect(endpoint.hostname).toBe(emulatorName);
    // No port in the endpoint: the SDK uses 5672 with UseDevelopmentEmulator=true; the emulator listens there.
    expect(endpoint.port).toBe('');
    expect((emulator.ports ?? []).map(parsePort).map((p) => p.container)).toContain(EMULATOR_AMQP_PORT);

    const emulatorConfig = JSON.parse(readFileSync(mountedFile(emulator, EMULATOR_CONFIG_TARGET), 'utf8'));
    const namespaces = emulatorConfig.UserConfig.NamespaceConfig as Array<{
      Type: string;
      Name: string;
      Entities: Array<{ Name: string; PartitionCount: string; ConsumerGroups?: Array<{ Name: string }> }>;
    }>;
    // The emulator's own schema: exactly one namespace, emulatorNs1, 1–10 hubs, PartitionCount a string.
    expect(namespaces).toHaveLength(1);
    expect(namespaces[0]).toMatchObject({ Type: 'EventHub', Name: 'emulatorNs1' });
    const hubs = namespaces[0]!.Entities;
    expect(hubs.length).toBeGreaterThanOrEqual(1);
    expect(hubs.length).toBeLessThanOrEqual(10);
    for (const hub of hubs) {
      expect(hub.PartitionCount).toMatch(/^[1-9]\d*$/);
      for (const group of hub.ConsumerGroups ?? []) expect(group.Name.toLowerCase()).not.toBe('$default');
    }
    expect(['File', 'Console', 'File,Console', 'Console,File']).toContain(
      emulatorConfig.UserConfig.LoggingConfig.Type,
    );
    const hubName = (sink.options.eventHubName as string | undefined) ?? parsed.eventHubName;
    expect(hubs.map((h) => h.Name)).toContain(hubName);
  });

  it('runs the emulator with Azurite as its metadata and blob store', () => {
    const [emulatorName, emulator] = serviceByImage('mcr.microsoft.com/azure-messaging/eventhubs-emulator');
    const [azuriteName] = serviceByImage('mcr.microsoft.com/azure-storage/azurite');
    expect(emulator.environment?.BLOB_SERVER).toBe(azuriteName);
    expect(emulator.environment?.METADATA_SERVER).toBe(azuriteName);
    expect(dependsOn(emulator)).toContain(azuriteName);
    expect(dependsOn(fwd)).toContain(emulatorName);
  });

  it('exports to the collector service on its OTLP/HTTP receiver port, which feeds the debug exporter', () => {
    config = loadWithComposeEnv();
    const sink = config.sinks.find((s) => s.type === 'otel')!;
    expect(sink.options.protocol).toBe('http/protobuf');
    const [collectorName, collector] = serviceByImage('otel/opentelemetry-collector-contrib');
    const { host, port } = hostOf(sink.options.endpoint as string);
    expect(host).toBe(collectorName);

    const configPath = argValue(collector.command ?? [], '--config');
    expect(configPath).toBeDefined();
    const collectorConfig = parseYamlStrict(
      readFileSync(mountedFile(collector, configPath!), 'utf8'),
      'otel-collector.yaml',
    ) as {
      receivers: { otlp: { protocols: { http: { endpoint: string }; grpc?: { endpoint: string } } } };
      exporters: Record<string, unknown>;
      service: { pipelines: { logs: { receivers: string[]; exporters: string[] } } };
    };
    const http = collectorConfig.receivers.otlp.protocols.http.endpoint;
    // Bound to all interfaces (the collector's default is localhost since 0.104), on the sink's port.
    expect(http).toBe(`0.0.0.0:${port}`);
    expect(collectorConfig.service.pipelines.logs.receivers).toContain('otlp');
    expect(collectorConfig.service.pipelines.logs.exporters).toContain('debug');
    expect(Object.keys(collectorConfig.exporters)).toContain('debug');
  });

  it('posts the webhook to the echo service on the port it listens on, signed', () => {
    config = loadWithComposeEnv();
    const sink = config.sinks.find((s) => s.type === 'webhook')!;
    const url = (sink.options.url as { reveal(): string }).reveal();
    const [echoName, echo] = serviceByImage('mendhak/http-https-echo');
    const { host, port } = hostOf(url);
    expect(host).toBe(echoName);
    expect(port).toBe(Number(echo.environment?.HTTP_PORT ?? 8080));
    expect(sink.options.signingSecrets).toHaveLength(1);
  });

  it('never routes the sinks through a proxy a Docker client may inject', () => {
    config = loadWithComposeEnv();
    const noProxy = (fwd.environment?.NO_PROXY ?? '').split(',');
    const eventHubs = config.sinks.find((s) => s.type === 'eventhubs')!;
    const hosts = [
      hostOf(config.imds.endpoint).host,
      hostOf((config.sinks.find((s) => s.type === 'webhook')!.options.url as { reveal(): string }).reveal())
        .host,
      hostOf(config.sinks.find((s) => s.type === 'otel')!.options.endpoint as string).host,
      new URL(
        parseEventHubConnectionString((eventHubs.options.connectionString as { reveal(): string }).reveal())
          .endpoint,
      ).hostname,
    ];
    for (const host of hosts) expect(noProxy).toContain(host);
    expect(fwd.environment?.no_proxy).toBe(fwd.environment?.NO_PROXY);
  });

  it('has an on-demand reader for the same hub with the same connection string', () => {
    config = loadWithComposeEnv();
    const reader = Object.values(compose.services).find((s) =>
      (s.entrypoint ?? []).some((a) => a.endsWith('read-event-hubs.mjs')),
    );
    expect(reader?.profiles).toEqual(['tools']);
    const script = reader!.entrypoint!.at(-1)!;
    expect(existsSync(mountedFile(reader!, script))).toBe(true);
    // Under /app so that the script resolves @azure/event-hubs from the image's node_modules.
    expect(script.startsWith('/app/')).toBe(true);
    expect(reader!.environment?.EVENTHUBS_CONNECTION_STRING).toBe(
      fwd.environment?.SEF_EVENTHUBS_CONNECTION_STRING,
    );
    expect(reader!.environment?.EVENTHUB_NAME).toBe(
      config.sinks.find((s) => s.type === 'eventhubs')!.options.eventHubName,
    );
  });
});

describe('the fleet service, config/compose/fleet.yaml and the postgres service', () => {
  const FLEET_CONFIG_TARGET = '/etc/sef-fleet/fleet.yaml';

  function fleetService(): ComposeService {
    const [, fleet] = forwarderService('fleet');
    return fleet;
  }

  function loadFleetWithComposeEnv() {
    const fleet = fleetService();
    expect(fleet.command).toEqual(['fleet', 'run', '--config', FLEET_CONFIG_TARGET]);
    const file = mountedFile(fleet, FLEET_CONFIG_TARGET);
    expect(file).toBe(join(REPO, 'config', 'compose', 'fleet.yaml'));
    return loadFleetConfig({ file, env: fleet.environment ?? {} });
  }

  it('validates with the real schema using the compose environment, and not without it', () => {
    const config = loadFleetWithComposeEnv();
    expect(config.database).toMatch(/^postgres:\/\//);
    const file = join(REPO, 'config', 'compose', 'fleet.yaml');
    expect(() => loadFleetConfig({ file, env: {} })).toThrow(/SEF_FLEET_/);
  });

  it('keeps the history in the postgres service, with the credentials that service creates', () => {
    const config = loadFleetWithComposeEnv();
    const [postgresName, postgres] = serviceByImage('postgres');
    const url = new URL(config.database);
    expect(url.hostname).toBe(postgresName);
    expect(url.port).toBe('5432');
    expect(decodeURIComponent(url.username)).toBe(postgres.environment?.POSTGRES_USER);
    expect(decodeURIComponent(url.password)).toBe(postgres.environment?.POSTGRES_PASSWORD);
    expect(url.pathname).toBe(`/${postgres.environment?.POSTGRES_DB}`);
    expect(fleetService().depends_on).toMatchObject({ [postgresName]: { condition: 'service_healthy' } });
    expect(postgres.healthcheck?.test).toContain('pg_isready');
  });

  it('reads the hub the forwarder sends to, in a consumer group of the emulator config, checkpoints in Azurite', () => {
    const config = loadFleetWithComposeEnv();
    const fleet = fleetService();
    const [emulatorName, emulator] = serviceByImage('mcr.microsoft.com/azure-messaging/eventhubs-emulator');
    const [azuriteName] = serviceByImage('mcr.microsoft.com/azure-storage/azurite');
    const [, fwd] = forwarderService('run');
    expect(fleet.environment?.SEF_FLEET_EH).toBe(fwd.environment?.SEF_EVENTHUBS_CONNECTION_STRING);
    const parsed = parseEventHubConnectionString(config.eventHubs.connectionString!.reveal());
    expect(new URL(parsed.endpoint).hostname).toBe(emulatorName);
    for (const [key, value] of Object.entries(fwd.environment ?? {})) vi.stubEnv(key, value);
    const forwarderHub = loadConfig({
      file: mountedFile(fwd, FORWARDER_CONFIG_TARGET),
      env: fwd.environment ?? {},
    }).sinks.find((s) => s.type === 'eventhubs')!.options.eventHubName;
    expect(config.eventHubs.eventHubName).toBe(forwarderHub);
    const emulatorConfig = JSON.parse(readFileSync(mountedFile(emulator, EMULATOR_CONFIG_TARGET), 'utf8'));
    const hub = (
      emulatorConfig.UserConfig.NamespaceConfig[0].Entities as Array<{
        Name: string;
        ConsumerGroups?: Array<{ Name: string }>;
      }>
    ).find((h) => h.Name === config.eventHubs.eventHubName)!;
    expect(hub.ConsumerGroups?.map((g) => g.Name)).toContain(config.eventHubs.consumerGroup);
    expect(config.checkpoints.connectionString!.reveal()).toContain(
      `BlobEndpoint=http://${azuriteName}:10000/`,
    );
    expect(dependsOn(fleet)).toEqual(expect.arrayContaining([emulatorName, azuriteName]));
    for (const host of [emulatorName, azuriteName, new URL(config.database).hostname])
      expect((fleet.environment?.NO_PROXY ?? '').split(',')).toContain(host);
  });

  it('serves the dashboard on the published port that its healthcheck probes', async () => {
    const config = loadFleetWithComposeEnv();
    expect(config.dashboard.host).toBe('0.0.0.0');
    const ports = (fleetService().ports ?? []).map(parsePort);
    expect(ports.map((p) => p.container)).toContain(config.dashboard.port);
    expect(await probe(fleetService().healthcheck!.test, String(config.dashboard.port), '/healthz')).toBe(
      true,
    );
  });
});

describe('Dockerfile', () => {
  const instructions = parseDockerfile(readFileSync(join(REPO, 'Dockerfile'), 'utf8'));

  it('copies only paths that exist in the build context and are not excluded by .dockerignore', () => {
    const ignored = readFileSync(join(REPO, '.dockerignore'), 'utf8')
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
    const copies = instructions.filter((i) => i.keyword === 'COPY' && !i.args.startsWith('--from'));
    expect(copies.length).toBeGreaterThan(0);
    for (const copy of copies) {
      const parts = copy.args.split(/\s+/);
      for (const source of parts.slice(0, -1)) {
        expect(existsSync(join(REPO, source)), `COPY source ${source} exists`).toBe(true);
        expect(ignored, `${source} is not in .dockerignore`).not.toContain(source);
      }
    }
  });

  it('builds the single executable for the target architecture and runs it, with no Node.js in the image', () => {
    const build = instructions.find(
      (i) => i.keyword === 'RUN' && i.args.includes('scripts/package/build.ts'),
    );
    expect(build?.args).toContain('--no-archives');
    expect(build?.args).toContain('$TARGETARCH');
    expect(existsSync(join(REPO, 'scripts', 'package', 'build.ts'))).toBe(true);
    // The SEA blob must come from the pinned Node.js version (package.json devDependencies.node).
    const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
      devDependencies: Record<string, string>;
    };
    const froms = instructions.filter((i) => i.keyword === 'FROM').map((i) => i.args);
    expect(froms[0]).toBe(`node:${pkg.devDependencies.node}-bookworm-slim AS build`);
    const finalStage = Math.max(...instructions.map((i) => i.stage));
    expect(froms.at(-1)).toBe('debian:bookworm-slim');
    const copy = instructions.find((i) => i.keyword === 'COPY' && i.stage === finalStage)!;
    expect(copy.args).toBe(
      '--from=build /scheduled-events-forwarder /usr/local/bin/scheduled-events-forwarder',
    );
    const entrypoint = JSON.parse(instructions.find((i) => i.keyword === 'ENTRYPOINT')!.args) as string[];
    expect(entrypoint).toEqual(['/usr/local/bin/scheduled-events-forwarder']);
  });

  it('runs as an unprivileged user with the state directory as a volume', () => {
    const finalStage = Math.max(...instructions.map((i) => i.stage));
    const user = instructions.filter((i) => i.keyword === 'USER' && i.stage === finalStage).at(-1);
    expect(user?.args).toBe('sef');
    const run = instructions.find((i) => i.keyword === 'RUN' && i.stage === finalStage)!;
    expect(run.args).toMatch(/useradd --system --uid 10001/);
    expect(run.args).toMatch(/chmod 0700 \/var\/lib\/scheduled-events-forwarder/);
    const volume = JSON.parse(instructions.find((i) => i.keyword === 'VOLUME')!.args) as string[];
    expect(volume).toEqual([defaultStateDir('linux', {})]);
    const cmd = JSON.parse(instructions.find((i) => i.keyword === 'CMD')!.args) as string[];
    expect(cmd).toEqual(['run', '--config', FORWARDER_CONFIG_TARGET]);
  });

  it('embeds the bundled scenarios in the executable (no config/ needed in the image)', () => {
    const build = instructions.filter((i) => i.stage === 0 && i.keyword === 'COPY').map((i) => i.args);
    expect(build).toContain('config ./config');
    expect(existsSync(join(REPO, 'config', 'scenarios'))).toBe(true);
  });
});
