/**
 * Heartbeats (docs/record-format.md, Heartbeats): one periodic send (src/delivery/periodic.ts) per enabled sink
 * whose `heartbeats` option is on, at start, every `heartbeat.intervalSeconds` and at a clean stop. Each
 * heartbeat is built when it is sent (src/transform/heartbeat.ts) from what the forwarder knows then: the health
 * the /readyz body reports (the HealthTracker the pipeline feeds), the outbox (pending, oldest pending, dead
 * letters per sink), the configuration (its digest, the approval mode) and the identity. Reading the outbox is a
 * read: a heartbeat writes nothing to disk, and a lost one is replaced by the next (latest wins).
 */
import type { Config } from '../config/index.ts';
import { redactConfig } from '../config/index.ts';
import type { PeriodicSend } from '../delivery/index.ts';
import type { HeartbeatData, HeartbeatSink, HeartbeatTrigger } from '../domain/index.ts';
import type { PeriodicParts } from '../pipeline/periodic-sends.ts';
import { buildHeartbeat } from '../transform/index.ts';
import type { HealthState } from './health.ts';

const { createHash } = process.getBuiltinModule('node:crypto');

/** Longest lastError a heartbeat carries (the schema's bound). */
const MAX_ERROR_LENGTH = 300;

export interface HeartbeatOptions {
  /** The health /readyz reports (HealthTracker.snapshot). */
  health: () => HealthState;
  version: string;
  /** When this run started, epoch ms. */
  startedAtMs: number;
  /** Wall clock, epoch ms (tests). */
  now?: () => number;
  /**
   * Each sink's last heartbeat sequence number: the sends are built again when a reload changes the sinks, and a
   * sink's sequence goes on (its heartbeat ids stay unique within the run). Default: a fresh map.
   */
  sequences?: Map<string, number>;
}

/** `sha256:` + 16 hex digits of the effective configuration with every secret redacted (never a secret). */
export function configDigest(config: Config): string {
  const { value } = redactConfig(config);
  return `sha256:${createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 16)}`;
}

/** The names of the enabled sinks that receive heartbeats. */
export function heartbeatSinkNames(config: Config): string[] {
  return config.sinks.filter((s) => s.enabled && s.heartbeats).map((s) => s.name);
}

/** The heartbeat sends of a run: one per sink with heartbeats on (a PeriodicSendsFactory). */
export function heartbeatSends(options: HeartbeatOptions, parts: PeriodicParts): PeriodicSend[] {
  const { config } = parts;
  const sequences = options.sequences ?? new Map<string, number>();
  const now = options.now ?? Date.now;
  const digest = configDigest(config);
  const intervalSeconds = config.heartbeat.intervalSeconds;
  const approval = approvalMode(config);
  const build = (trigger: HeartbeatTrigger, sequence: number) => {
    const health = options.health();
    const timeMs = now();
    return buildHeartbeat({
      trigger,
      sequence,
      intervalSeconds,
      timeMs,
      vm: parts.identity(),
      kubernetes: parts.kubernetes(),
      forwarder: {
        version: options.version,
        configDigest: digest,
        startedAtMs: options.startedAtMs,
        platform: process.platform,
        source: parts.source,
      },
      imds: imdsStatus(health, timeMs),
      store: { ok: health.store.ok },
      sinks: sinkStatus(parts, health, timeMs),
      approval,
    });
  };
  return parts.sinks
    .filter(({ config: c, sink }) => c.heartbeats && sink.sendHeartbeat !== undefined)
    .map(({ sink }) => ({
      kind: 'heartbeat',
      sink: sink.name,
      intervalMs: intervalSeconds * 1000,
      atStart: true,
      atStop: true,
      send: (trigger, signal) => {
        const sequence = (sequences.get(sink.name) ?? 0) + 1;
        sequences.set(sink.name, sequence);
        return sink.sendHeartbeat!(build(trigger, sequence), signal);
      },
    }));
}

/** The approval mode of the configuration. */
function approvalMode(config: Config): HeartbeatData['approval'] {
  const a = config.approval;
  return {
    policy: a.rules.length > 0,
    rules: a.rules.length,
    dryRun: a.dryRun,
    leader: a.leader,
    hooks: a.hooks.prepare.length + a.hooks.recover.length,
  };
}

/**
 * A heartbeat's IMDS is ok when a poll succeeded within this long (or /readyz's staleness, when longer): a
 * heartbeat stands for an hour, so one late poll under load must not make the VM look unhealthy until the next.
 */
const IMDS_OK_WITHIN_MS = 60_000;

/** IMDS as /readyz sees it; the failures count only while no poll succeeded since the last failure. */
function imdsStatus(health: HealthState, nowMs: number): HeartbeatData['imds'] {
  const { imds } = health;
  const failure = imds.lastFailure;
  const failingNow =
    failure !== undefined &&
    (imds.lastSuccessAt === null || Date.parse(failure.at) > Date.parse(imds.lastSuccessAt));
  const within = Math.max(IMDS_OK_WITHIN_MS, imds.staleAfterSeconds * 1000);
  return {
    ok: imds.lastSuccessAt !== null && nowMs - Date.parse(imds.lastSuccessAt) <= within,
    lastSuccessAt: imds.lastSuccessAt,
    consecutiveFailures: failingNow ? failure.consecutiveFailures : 0,
    ...(failure === undefined ? {} : { lastFailure: { reason: failure.reason, at: failure.at } }),
  };
}

/** Every enabled sink: its state from the health, its backlog and dead letters from the outbox. */
function sinkStatus(parts: PeriodicParts, health: HealthState, nowMs: number): HeartbeatSink[] {
  const queues = new Map(parts.store.stats().map((q) => [q.sink, q]));
  return parts.sinks.map(({ config }) => {
    const queue = queues.get(config.name);
    const state = health.sinks[config.name];
    const oldest = queue?.oldestCreatedAt ?? null;
    const entry: HeartbeatSink = {
      name: config.name,
      type: config.type,
      state: state?.state ?? 'ok',
      pending: queue?.pending ?? 0,
      oldestPendingAgeSeconds: oldest === null ? 0 : Math.max(0, Math.round((nowMs - oldest) / 1000)),
      deadLetters: queue?.deadLetters ?? 0,
    };
    if (state?.lastError !== undefined && entry.state !== 'ok')
      entry.lastError = state.lastError.slice(0, MAX_ERROR_LENGTH);
    return entry;
  });
}
