/**
 * The loopback destinations every sink type is benchmarked against (the project's own test servers: the
 * recording HTTP server, the OTLP/HTTP receiver and the Event Hubs double), the raw sink config entries
 * pointing at them, and in-process sink construction through the real config schema and sink registry.
 */
import { join } from 'node:path';
import { validateConfig } from '../../src/config/index.ts';
import { silentLogger } from '../../src/log.ts';
import { findSinkFactory } from '../../src/sinks/registry.ts';
import type { Sink } from '../../src/sinks/types.ts';
import { type EventHubsDouble, startEventHubsDouble } from '../../test/support/event-hubs-double/index.ts';
import { HttpSinkServer } from '../../test/support/http-sink-server.ts';
import { type OtlpHttpReceiver, startOtlpHttpReceiver } from '../../test/support/otlp-receiver.ts';
import { BENCH_VM } from './records.ts';

/** Sink types the delivery benchmarks cover (stdout is left out: it would write into the benchmark's output). */
export const SINK_KINDS = ['file', 'exec', 'webhook', 'slack', 'teams', 'eventhubs', 'otel'] as const;
export type SinkKind = (typeof SINK_KINDS)[number];

export interface Targets {
  webhook: HttpSinkServer;
  slack: HttpSinkServer;
  teams: HttpSinkServer;
  otlp: OtlpHttpReceiver;
  eventHubs: EventHubsDouble;
  close(): Promise<void>;
}

export const EVENT_HUB = 'records';

/**
 * `eventHubsTls`: the Event Hubs double listens with TLS (so its HTTPS REST front serves heartbeats as a real
 * namespace would); the process that sends to it must trust the certificate (NODE_EXTRA_CA_CERTS). Default: plain
 * TCP with UseDevelopmentEmulator=true, for in-process sinks.
 */
export async function startTargets(
  options: { eventHubsTls?: { key: string; cert: string } } = {},
): Promise<Targets> {
  const [webhook, slack, teams, otlp, eventHubs] = await Promise.all([
    HttpSinkServer.start(),
    HttpSinkServer.start(),
    HttpSinkServer.start(),
    startOtlpHttpReceiver(),
    startEventHubsDouble({
      hubs: { [EVENT_HUB]: 4 },
      ...(options.eventHubsTls === undefined ? {} : { tls: options.eventHubsTls }),
    }),
  ]);
  return {
    webhook,
    slack,
    teams,
    otlp,
    eventHubs,
    close: async () => {
      await Promise.allSettled([
        webhook.close(),
        slack.close(),
        teams.close(),
        otlp.close(),
        eventHubs.close(),
      ]);
    },
  };
}

/** The exec hook: a shell that reads the record from stdin and exits 0 (node on Windows). */
export function execHook(): { command: string; args: string[] } {
  return process.platform === 'win32'
    ? { command: process.execPath, args: ['-e', 'process.stdin.resume()'] }
    : { command: 'sh', args: ['-c', 'cat > /dev/null'] };
}

export interface EntryOptions {
  /** Directory for the file sink's output. */
  dir: string;
  /** Slack/Teams rate limit (default: the sink's own default of 1000 ms). */
  chatMinIntervalMs?: number;
  /** Name suffix, for two sinks of one kind. */
  suffix?: string;
}

/** The raw config entry (YAML shape) of one sink of `kind` pointing at `targets`. */
export function sinkEntry(
  kind: SinkKind | 'stdout',
  targets: Targets,
  options: EntryOptions,
): Record<string, unknown> {
  const name = `${kind}${options.suffix ?? ''}`;
  const chat = options.chatMinIntervalMs === undefined ? {} : { minIntervalMs: options.chatMinIntervalMs };
  switch (kind) {
    case 'stdout':
      return { name, type: 'stdout' };
    case 'file':
      return { name, type: 'file', path: join(options.dir, `${name}.jsonl`) };
    case 'exec':
      return { name, type: 'exec', ...execHook() };
    case 'webhook':
      return { name, type: 'webhook', url: targets.webhook.url(`/hook/${name}`) };
    case 'slack':
      return { name, type: 'slack', url: targets.slack.url('/services/T000/B000/XXXX'), ...chat };
    case 'teams':
      return { name, type: 'teams', url: targets.teams.url('/workflows/bench'), ...chat };
    case 'eventhubs':
      return { name, type: 'eventhubs', connectionString: targets.eventHubs.connectionString(EVENT_HUB) };
    case 'otel':
      return { name, type: 'otel', endpoint: targets.otlp.url, protocol: 'http/protobuf' };
  }
}

/** Builds sinks in-process from raw entries, through the real config schema and the sink registry. */
export async function createSinks(
  entries: Array<Record<string, unknown>>,
  stateDir: string,
): Promise<Sink[]> {
  const config = validateConfig({ stateDir, sinks: entries });
  const sinks: Sink[] = [];
  for (const s of config.sinks) {
    const factory = findSinkFactory(s.type);
    if (factory === undefined) throw new Error(`unknown sink type ${s.type}`);
    // create() may return a Promise (sinks load their implementation lazily)
    sinks.push(
      await factory.create(s.name, s.options, { logger: silentLogger(), vm: () => BENCH_VM, stateDir }),
    );
  }
  return sinks;
}
