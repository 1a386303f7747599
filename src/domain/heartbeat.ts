/**
 * The heartbeat: a CloudEvents 1.0 structured-mode JSON object every forwarder sends at start, at an interval
 * (`heartbeat.intervalSeconds`) and at a clean stop to the sinks that opt in, saying that it runs and how it is:
 * the VM, the forwarder's version and configuration digest, IMDS health, each sink's backlog and dead letters,
 * the approval mode. Not a lifecycle record (its own `type`); documented in docs/record-format.md
 * ("Heartbeats") and validated by schemas/heartbeat.schema.json. Built by src/transform/heartbeat.ts; the fleet
 * keeps the latest per VM (src/fleet/history/coverage.ts) and judges it with heartbeatProblems() below.
 */
import type { KubernetesRecordContext, LifecycleRecord, LifecycleRecordData } from './record.ts';

/** The CloudEvents `type` of a heartbeat. */
export const HEARTBEAT_TYPE = 'io.github.scheduledeventsforwarder.forwarder.heartbeat';

/** Why a heartbeat was sent. */
export const HEARTBEAT_TRIGGERS = ['start', 'interval', 'stop'] as const;
export type HeartbeatTrigger = (typeof HEARTBEAT_TRIGGERS)[number];

/** A sink's state as the forwarder sees it (the /readyz vocabulary). */
export const HEARTBEAT_SINK_STATES = ['ok', 'retrying', 'failing', 'paused'] as const;
export type HeartbeatSinkState = (typeof HEARTBEAT_SINK_STATES)[number];

/** One configured (enabled) sink in a heartbeat. */
export interface HeartbeatSink {
  name: string;
  type: string;
  state: HeartbeatSinkState;
  /** Records waiting in the outbox for this sink. */
  pending: number;
  /** Age of the oldest of them, in seconds (0 when none). */
  oldestPendingAgeSeconds: number;
  /** Dead letters of this sink in the store now (`deadletters list`). */
  deadLetters: number;
  /** The last delivery error (redacted, at most 300 characters), while the sink is not ok. */
  lastError?: string;
}

/** The heartbeat's `data`. Field-level documentation lives in docs/record-format.md. */
export interface HeartbeatData {
  trigger: HeartbeatTrigger;
  /** 1, 2, … per run of the forwarder (the start heartbeat is 1). */
  sequence: number;
  /** The configured interval: the fleet counts the VM silent when no heartbeat came for longer (plus a margin). */
  intervalSeconds: number;
  vm: LifecycleRecordData['vm'];
  /** Only with `kubernetes.enabled`: the node (and cluster) the forwarder runs on. */
  kubernetes?: Pick<KubernetesRecordContext, 'nodeName' | 'clusterName'>;
  forwarder: {
    version: string;
    /** `sha256:` + the first 16 hex digits of SHA-256 over the effective configuration with every secret redacted. */
    configDigest: string;
    /** When this run started (ISO 8601). */
    startedAt: string;
    platform: string;
    /** The configured source type (imds, replay). */
    source: string;
  };
  imds: {
    /** A poll succeeded within the last minute (or /readyz's staleness, when longer). */
    ok: boolean;
    lastSuccessAt: string | null;
    consecutiveFailures: number;
    lastFailure?: { reason: string; at: string };
  };
  store: { ok: boolean };
  sinks: HeartbeatSink[];
  approval: {
    /** At least one approval rule is configured. */
    policy: boolean;
    rules: number;
    dryRun: boolean;
    leader: string;
    /** Prepare and recover hooks configured. */
    hooks: number;
  };
}

/** The heartbeat CloudEvent. */
export interface HeartbeatRecord {
  specversion: '1.0';
  /** Deterministic: a UUID (v5 layout) of source|heartbeat|startedAt|sequence. */
  id: string;
  /** The VM, as in lifecycle records (its ARM resource ID, or a urn:azure:vm URN). */
  source: string;
  type: typeof HEARTBEAT_TYPE;
  /** When it was built (ISO 8601 UTC). */
  time: string;
  datacontenttype: 'application/json';
  /** Extension: the VM's vmId ('' when unknown). */
  vmid: string;
  data: HeartbeatData;
}

/** Every CloudEvent the forwarder sends: lifecycle records (through the outbox) and heartbeats (outside it). */
export type ForwarderEvent = LifecycleRecord | HeartbeatRecord;

/** True for a heartbeat (by its type); lifecycle records are not. */
export function isHeartbeat(event: { type: string }): event is HeartbeatRecord {
  return event.type === HEARTBEAT_TYPE;
}

/** What makes a forwarder unhealthy in the fleet's eyes (docs/fleet.md, Coverage). */
export interface HeartbeatProblem {
  code: 'imds' | 'store' | 'dead-letters' | 'backlog' | 'sink-failing' | 'sink-paused';
  /** The sink concerned (not for imds, store). */
  sink?: string;
  /** One line for operators. */
  detail: string;
}

/** Thresholds of heartbeatProblems. */
export interface HeartbeatThresholds {
  /** A sink whose oldest pending record is older than this has a stuck backlog. */
  backlogSeconds: number;
}

/**
 * Why the forwarder that sent `data` is unhealthy (empty: healthy): IMDS failing, the store not writable, and
 * per sink dead letters, a stuck backlog, a failing or paused sink. Pure; the fleet calls it at ingest.
 */
export function heartbeatProblems(data: HeartbeatData, thresholds: HeartbeatThresholds): HeartbeatProblem[] {
  const problems: HeartbeatProblem[] = [];
  if (!data.imds.ok)
    problems.push({
      code: 'imds',
      detail:
        data.imds.lastFailure === undefined
          ? 'no successful IMDS poll'
          : `IMDS failing (${data.imds.lastFailure.reason}, ${data.imds.consecutiveFailures} polls in a row)`,
    });
  if (!data.store.ok) problems.push({ code: 'store', detail: 'the state store does not accept writes' });
  for (const s of data.sinks) {
    if (s.deadLetters > 0)
      problems.push({
        code: 'dead-letters',
        sink: s.name,
        detail: `sink ${s.name}: ${s.deadLetters} dead letter${s.deadLetters === 1 ? '' : 's'}`,
      });
    if (s.pending > 0 && s.oldestPendingAgeSeconds > thresholds.backlogSeconds)
      problems.push({
        code: 'backlog',
        sink: s.name,
        detail: `sink ${s.name}: ${s.pending} pending, oldest ${Math.round(s.oldestPendingAgeSeconds)} s`,
      });
    if (s.state === 'failing')
      problems.push({
        code: 'sink-failing',
        sink: s.name,
        detail: `sink ${s.name} failing${s.lastError === undefined ? '' : `: ${s.lastError}`}`,
      });
    if (s.state === 'paused')
      problems.push({
        code: 'sink-paused',
        sink: s.name,
        detail: `sink ${s.name} paused${s.lastError === undefined ? '' : `: ${s.lastError}`}`,
      });
  }
  return problems;
}
