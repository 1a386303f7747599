/**
 * The ONE zod schema for the forwarder's YAML configuration. Every object is strict (unknown keys are errors),
 * every key carries a description (docs/configuration.md and schemas/config.schema.json are generated from
 * it by scripts/gen-config-docs.ts), and sink entries are discriminated by `type` over the sink registry
 * (src/sinks/registry.ts): each registered SinkFactory contributes its own optionsSchema and defaultFilter.
 *
 * Adding a top-level section: write a `z.object({...}).strict().prefault({}).describe(...)` below and add it
 * to TOP_LEVEL_SECTIONS — the loader, `config show`, the docs and the editor schema pick it up.
 */
import { z } from 'zod';
import { approvalSection } from '../approval/config.ts';
import { DEFAULT_BACKOFF, PAUSE_PROBE_BACKOFF } from '../backoff.ts';
import { TRANSITIONS } from '../domain/index.ts';
import { kubernetesSection } from '../kubernetes/config.ts';
import { defaultStateDir, temporaryDiskReason } from '../platform.ts';
import { SINK_FACTORIES } from '../sinks/registry.ts';
import type { SinkFactory, SinkFilter } from '../sinks/types.ts';
import {
  DEFAULT_API_VERSION,
  DEFAULT_FIRST_REQUEST_TIMEOUT_MS,
  DEFAULT_IDENTITY_REFRESH_MS,
  DEFAULT_IMDS_ENDPOINT,
  DEFAULT_INSTANCE_API_VERSION,
  DEFAULT_POLL_INTERVAL_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  MIN_POLL_INTERVAL_MS,
} from '../sources/imds/defaults.ts';
import { SOURCE_FACTORIES } from '../sources/registry.ts';
import { DEFAULT_SINK_READINESS, SINK_READINESS } from './readiness.ts';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** The registered sources' option schemas, as a tuple (zod's discriminatedUnion wants one). */
type OptionSchemas<T extends readonly unknown[]> = {
  -readonly [K in keyof T]: T[K] extends { optionsSchema: infer S } ? S : never;
};
type SourceSchemas = OptionSchemas<typeof SOURCE_FACTORIES>;

const positiveInt = () => z.number().int().positive();

/** A sink's dead letters kept at most (docs/delivery.md, "Dead-letter cap"): about 20 MB of typical records. */
export const DEFAULT_MAX_DEAD_LETTER_ROWS = 10_000;
export const DEFAULT_MAX_DEAD_LETTER_BYTES = 32 * 1024 * 1024;

const imdsSection = z
  .object({
    endpoint: z
      .url({ protocol: /^https?$/ })
      .default(DEFAULT_IMDS_ENDPOINT)
      .describe('Base URL of the Instance Metadata Service. Point it at the simulator for drills and tests.'),
    apiVersion: z
      .string()
      .min(1)
      .default(DEFAULT_API_VERSION)
      .describe('api-version used for /metadata/scheduledevents.'),
    instanceApiVersion: z
      .string()
      .min(1)
      .default(DEFAULT_INSTANCE_API_VERSION)
      .describe('api-version used for /metadata/instance (VM identity).'),
    pollIntervalMs: z
      .number()
      .int()
      .min(MIN_POLL_INTERVAL_MS)
      .default(DEFAULT_POLL_INTERVAL_MS)
      .describe(
        `Fixed poll rate in milliseconds (at least ${MIN_POLL_INTERVAL_MS}: IMDS allows about 5 requests/s per VM).`,
      ),
    firstRequestTimeoutMs: positiveInt()
      .default(DEFAULT_FIRST_REQUEST_TIMEOUT_MS)
      .describe(
        'Timeout of the first Scheduled Events request (enabling the feature can take up to 2 minutes).',
      ),
    requestTimeoutMs: positiveInt()
      .default(DEFAULT_REQUEST_TIMEOUT_MS)
      .describe('Timeout of every later IMDS request.'),
    identityRefreshMs: positiveInt()
      .default(DEFAULT_IDENTITY_REFRESH_MS)
      .describe(
        'How often the VM identity (/metadata/instance) is refreshed; also refreshed after a reboot.',
      ),
    captureFile: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Append every distinct Scheduled Events document seen to this JSON-lines capture (replayable with source.type replay).',
      ),
  })
  .strict()
  .prefault({})
  .describe('Instance Metadata Service (IMDS) access.');

/** Built from the source registry (src/sources/registry.ts), the way `sinks` is built from the sink registry. */
const sourceSection = z
  .discriminatedUnion('type', SOURCE_FACTORIES.map((f) => f.optionsSchema) as unknown as SourceSchemas)
  .prefault({ type: 'imds' })
  .describe('Where Scheduled Events documents come from.');

const logSection = z
  .object({
    level: z.enum(LOG_LEVELS).default('info').describe('Log level (logs go to stderr as JSON lines).'),
  })
  .strict()
  .prefault({})
  .describe('Logging.');

/** How often the forwarder sends a heartbeat, unless it is set (docs/record-format.md, Heartbeats). */
export const DEFAULT_HEARTBEAT_INTERVAL_SECONDS = 3600;

const heartbeatSection = z
  .object({
    intervalSeconds: positiveInt()
      .default(DEFAULT_HEARTBEAT_INTERVAL_SECONDS)
      .describe(
        'Seconds between two heartbeats (one is also sent at start and at a clean stop). The fleet counts a VM silent when none came for longer than this plus its margin: 3600 lets it notice a dead forwarder within about 1.5 h for about 40 KB per VM per day.',
      ),
  })
  .strict()
  .prefault({})
  .describe(
    'Heartbeats: what the forwarder sends, outside the outbox, to the sinks whose `heartbeats` option is on (Event Hubs by default) to say it runs and how.',
  );

const telemetrySection = z
  .object({
    listen: z
      .object({
        enabled: z
          .boolean()
          .default(false)
          .describe('Serve /healthz, /readyz and /metrics (Prometheus) over HTTP.'),
        host: z
          .string()
          .min(1)
          .default('127.0.0.1')
          .describe('Listen address; keep it on loopback unless a scraper needs remote access.'),
        port: z.number().int().min(0).max(65_535).default(9464).describe('Listen port (0 = any free port).'),
      })
      .strict()
      .prefault({})
      .describe('HTTP endpoint for health checks and metrics.'),
    readyPollIntervals: positiveInt()
      .default(3)
      .describe('/readyz fails when no successful poll happened within this many poll intervals.'),
    readiness: z
      .object({
        sinks: z
          .enum(SINK_READINESS)
          .default(DEFAULT_SINK_READINESS)
          .describe(
            'How sinks count for /readyz: "ignore" (default: a destination\'s outage is not this instance\'s, and would turn every pod of a DaemonSet unready at once), "all-failing" (not ready when every sink is failing or paused) or "any-failing" (not ready when one is). A sink is failing after 3 consecutive failed attempts, paused while its destination refuses everything; /readyz lists every sink either way.',
          ),
      })
      .strict()
      .prefault({})
      .describe('What /readyz counts besides IMDS and the state store (docs/observability.md).'),
  })
  .strict()
  .prefault({})
  .describe('Health checks and metrics.');

/** The per-sink record filter; defaults come from the sink type's defaultFilter. */
function filterSchema(defaults: Partial<SinkFilter> | undefined) {
  return z
    .object({
      transitions: z
        .array(z.enum(TRANSITIONS))
        .min(1)
        .default([...((defaults?.transitions as (typeof TRANSITIONS)[number][] | undefined) ?? TRANSITIONS)])
        .describe('Transitions this sink receives.'),
      eventTypes: z
        .array(z.string().min(1))
        .default(defaults?.eventTypes ?? [])
        .describe(
          'IMDS EventType values this sink receives (case-insensitive, e.g. Reboot, Freeze); empty = every type.',
        ),
      scope: z
        .enum(['this-vm', 'all'])
        .default(defaults?.scope ?? 'all')
        .describe(
          '"this-vm": only events whose Resources include this VM (affectsThisVm); "all": every event the VM sees.',
        ),
    })
    .strict()
    .prefault({})
    .describe('Which records this sink receives.');
}

/** A sink entry's `delivery` section (also read on its own by the outbox commands; see src/cli/commands/outbox.ts). */
export const deliverySchema = z
  .object({
    maxBatch: positiveInt()
      .optional()
      .describe("Largest batch per delivery (default and upper bound: the sink type's own maximum)."),
    backoff: z
      .object({
        initialMs: positiveInt()
          .default(DEFAULT_BACKOFF.initialMs)
          .describe('First retry delay (exponential backoff, full jitter).'),
        maxMs: positiveInt()
          .default(DEFAULT_BACKOFF.maxMs)
          .describe('Retry delay cap. Retryable errors are retried forever.'),
      })
      .strict()
      .prefault({})
      .describe('Retry backoff.'),
    probe: z
      .object({
        initialMs: positiveInt()
          .default(PAUSE_PROBE_BACKOFF.initialMs)
          .describe('First probe after the destination refused everything (then doubling, equal jitter).'),
        maxMs: positiveInt()
          .default(PAUSE_PROBE_BACKOFF.maxMs)
          .describe('Longest wait between two probes of a paused sink.'),
      })
      .strict()
      .prefault({})
      .describe(
        'While the sink is paused (its destination refuses everything: credentials, authorization, a missing endpoint, TLS trust), one record probes the destination on this backoff; records stay pending and the sink resumes at the first probe accepted.',
      ),
    caps: z
      .object({
        maxPendingRows: positiveInt()
          .default(100_000)
          .describe(
            'Disk protection: pending rows above this move the oldest to dead letters (reason "overflow"), logged at error level.',
          ),
        maxPendingBytes: positiveInt()
          .default(64 * 1024 * 1024)
          .describe(
            'Disk protection: pending bytes above this move the oldest to dead letters (reason "overflow"), logged at error level.',
          ),
        maxAgeHours: z
          .number()
          .positive()
          .optional()
          .describe(
            'Pending rows older than this move to dead letters (reason "expired"), logged at error level. Default: none (records never expire by age).',
          ),
        maxDeadLetterRows: positiveInt()
          .default(DEFAULT_MAX_DEAD_LETTER_ROWS)
          .describe(
            'Disk protection for dead letters: beyond this many, the oldest are dropped for good (no longer replayable), logged at error level and counted in sef_dead_letters_dropped_total.',
          ),
        maxDeadLetterBytes: positiveInt()
          .default(DEFAULT_MAX_DEAD_LETTER_BYTES)
          .describe(
            'Disk protection for dead letters: beyond this many bytes of records, the oldest are dropped for good, logged at error level and counted in sef_dead_letters_dropped_total.',
          ),
      })
      .strict()
      .prefault({})
      .describe(
        'Per-sink limits. By default retries never expire by age; only the size caps apply. Pending records beyond a cap become dead letters (`deadletters list`, `deadletters replay`); dead letters beyond their own cap are dropped, oldest first (docs/delivery.md, "Dead-letter cap").',
      ),
  })
  .strict()
  .prefault({})
  .describe('Delivery tuning for this sink.');

/** Keys every sink entry has besides its type's own options. */
export const COMMON_SINK_KEYS = ['name', 'type', 'enabled', 'filter', 'delivery', 'heartbeats'] as const;

/** The sink types that can receive heartbeats, for messages (from the registry). */
export function heartbeatSinkTypes(factories: readonly SinkFactory[] = SINK_FACTORIES): string[] {
  return factories.filter((f) => f.heartbeats !== undefined).map((f) => f.type);
}

/**
 * A sink entry's `heartbeats` key: a boolean with the type's default where the type can receive heartbeats;
 * elsewhere only `false` (an error naming the types that can).
 */
function heartbeatsSchema(factory: SinkFactory, factories: readonly SinkFactory[]) {
  if (factory.heartbeats !== undefined)
    return z
      .boolean()
      .default(factory.heartbeats.default)
      .describe(
        "Send this sink the forwarder's heartbeats (heartbeat.intervalSeconds; docs/record-format.md, Heartbeats), outside the outbox: latest wins. The default depends on the sink type (on for eventhubs); slack, teams, pagerduty and alertmanager never receive them.",
      );
  const never = `${factory.type} sinks never receive heartbeats; they go to ${heartbeatSinkTypes(factories).join(', ')} sinks`;
  return z
    .boolean()
    .default(false)
    .refine((on) => !on, never)
    .describe(`${factory.type} sinks never receive heartbeats.`);
}

const SINK_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

function sinkEntrySchema(factory: SinkFactory, factories: readonly SinkFactory[]) {
  const common = {
    name: z
      .string()
      .regex(SINK_NAME, 'letters, digits, "_", "." or "-", starting with a letter or digit, at most 64')
      .describe('Unique sink name (used in the outbox, metrics and CLI).'),
    type: z.literal(factory.type).describe(factory.description),
    enabled: z
      .boolean()
      .default(true)
      .describe('Disabled sinks get no new outbox rows (already pending rows stay).'),
    filter: filterSchema(factory.defaultFilter),
    delivery: deliverySchema,
    heartbeats: heartbeatsSchema(factory, factories),
  };
  for (const key of COMMON_SINK_KEYS) {
    if (key in factory.optionsSchema.shape) {
      throw new Error(`sink type ${factory.type}: option "${key}" collides with a common sink key`);
    }
  }
  let entry: z.ZodType = z.object({ ...common, ...factory.optionsSchema.shape }).strict();
  // Keep the factory's own cross-field refinements (they see the options plus the common keys).
  const checks = factory.optionsSchema._zod.def.checks;
  if (checks !== undefined && checks.length > 0)
    entry = entry.check(...(checks as unknown as z.core.$ZodCheck<unknown>[]));
  return entry.describe(`${factory.type}: ${factory.description}`);
}

/** `registered`: every sink type (the messages name those that take heartbeats), `factories` those parsed. */
function sinksSchema(factories: readonly SinkFactory[], registered: readonly SinkFactory[] = factories) {
  const entries = factories.map((f) => sinkEntrySchema(f, registered));
  const entry =
    entries.length === 0
      ? z.never({ error: 'no sink types are registered' })
      : z.discriminatedUnion('type', entries as unknown as [z.ZodObject, ...z.ZodObject[]]);
  return z
    .array(entry)
    .default([])
    .describe(
      'Where records are delivered (at least once, in order per sink). Each entry: common keys plus the options of its type.',
    );
}

export interface BuildSchemaOptions {
  /** Sink types to accept (default: the registry). */
  factories?: readonly SinkFactory[];
  /** Platform used for the stateDir default (the docs generator pins it to linux). */
  platform?: NodeJS.Platform;
  /** Environment used for the stateDir default on Windows (%ProgramData%). */
  env?: Record<string, string | undefined>;
  /**
   * The document about to be parsed: only the sink types it configures get their entry schema (sinkTypesFor).
   * Without it (docs, `config schema`), every registered type does.
   */
  document?: unknown;
}

/**
 * The factories whose schemas parsing `document` needs: those of the sink types its `sinks` entries name, so a
 * sink type that is not configured costs nothing at start-up (its option schema is built on first use,
 * src/lazy.ts). When an entry names no registered type (or is not a mapping), every factory: the error then
 * lists every type, as with the whole registry.
 */
export function sinkFactoriesFor(
  document: unknown,
  factories: readonly SinkFactory[],
): readonly SinkFactory[] {
  const sinks = (document as { sinks?: unknown } | null | undefined)?.sinks;
  if (!Array.isArray(sinks)) return sinks === undefined ? [] : factories;
  const types = new Set<unknown>(sinks.map((entry) => (entry as { type?: unknown } | null)?.type));
  const chosen = factories.filter((f) => types.has(f.type));
  return chosen.length === types.size ? chosen : factories;
}

/**
 * Builds the configuration schema. Its input is the YAML document; its output is a plain object with every
 * default applied (sinks still flat; see normalizeConfig in index.ts).
 */
export function buildConfigSchema(options: BuildSchemaOptions = {}) {
  const registered = options.factories ?? SINK_FACTORIES;
  const factories =
    options.document === undefined ? registered : sinkFactoriesFor(options.document, registered);
  const platform = options.platform ?? process.platform;
  const env = options.env ?? process.env;
  const TOP_LEVEL_SECTIONS = {
    imds: imdsSection,
    source: sourceSection,
    stateDir: z
      .string()
      .min(1)
      .default(defaultStateDir(platform, env))
      .describe(
        'State directory (SQLite outbox). Default /var/lib/scheduled-events-forwarder on Linux, %ProgramData%\\scheduled-events-forwarder on Windows. Must not be on the temporary disk.',
      ),
    allowTemporaryDisk: z
      .boolean()
      .default(false)
      .describe(
        'Allow stateDir on the Azure temporary disk (/mnt, /mnt/resource, D:\\), which Redeploy and Preempt wipe.',
      ),
    log: logSection,
    telemetry: telemetrySection,
    heartbeat: heartbeatSection,
    shutdownDeadlineMs: positiveInt()
      .default(5000)
      .describe(
        'On SIGTERM/SIGINT, in-flight deliveries get this long before the process exits; on a reload, so does the in-flight delivery of a sink that is removed or rebuilt.',
      ),
    sinks: sinksSchema(factories, registered),
    approval: approvalSection,
    kubernetes: kubernetesSection,
  };
  return z
    .object(TOP_LEVEL_SECTIONS)
    .strict()
    .superRefine(
      (config, ctx) => {
        // Runs even when other keys are invalid (`when` below), so that every problem of a file is reported at
        // once: the values here may be partly unparsed.
        if (typeof config !== 'object' || config === null) return;
        const sinks: unknown[] = Array.isArray(config.sinks) ? config.sinks : [];
        const seen = new Map<string, number>();
        sinks.forEach((sink, index) => {
          const name = (sink as { name?: unknown } | null)?.name;
          if (typeof name !== 'string') return;
          const first = seen.get(name);
          if (first !== undefined) {
            ctx.addIssue({
              code: 'custom',
              path: ['sinks', index, 'name'],
              message: `duplicate sink name "${name}" (already used by sinks[${first}]); names must be unique`,
            });
          } else {
            seen.set(name, index);
          }
        });
        const hooks = (config.approval as { hooks?: Record<string, unknown> } | undefined)?.hooks ?? {};
        const kubernetesOn = (config.kubernetes as { enabled?: unknown } | undefined)?.enabled === true;
        for (const phase of ['prepare', 'recover']) {
          const list = hooks[phase];
          if (!Array.isArray(list)) continue;
          list.forEach((hook: unknown, index) => {
            if ((hook as { builtin?: unknown } | null)?.builtin === 'kubernetes-node' && !kubernetesOn) {
              ctx.addIssue({
                code: 'custom',
                path: ['approval', 'hooks', phase, index, 'builtin'],
                message: 'the built-in hook "kubernetes-node" needs kubernetes.enabled: true',
              });
            }
          });
        }
        const stateDir: unknown = config.stateDir;
        const reason = typeof stateDir === 'string' ? temporaryDiskReason(stateDir, platform) : undefined;
        if (reason !== undefined && config.allowTemporaryDisk !== true) {
          ctx.addIssue({
            code: 'custom',
            path: ['stateDir'],
            message:
              `${reason}: pending records and state kept there are lost exactly when maintenance happens. Choose ` +
              'a directory on the OS or a data disk, or set allowTemporaryDisk: true (--allow-temporary-disk) if ' +
              'you accept that',
          });
        }
      },
      { when: () => true },
    )
    .describe('scheduled-events-forwarder configuration');
}

export type ConfigSchema = ReturnType<typeof buildConfigSchema>;
/** The validated config as the schema outputs it (sink entries flat). */
export type ParsedConfig = z.output<ConfigSchema>;
