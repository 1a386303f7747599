/**
 * `outbox status`: what is pending per sink (count, bytes, oldest age, next attempt, last error) and how many
 * dead letters each sink has; with --config, which queues belong to sinks no longer configured (a reload or an edit
 * removed them: their records wait there). Reads the state directory without locking it, so it works while the forwarder runs;
 * an empty or missing state directory answers "nothing pending" (exit 0) without creating anything; one this
 * user cannot read is an error (exit 1) that names the path, its owner and mode, and the fix.
 *
 * The store commands read only `stateDir` and the sinks' names and `delivery` settings from --config: they never
 * resolve secret references, so they work from an admin shell where the service's secret variables are not set.
 */
import type { Command } from 'commander';
import { formatDurationCompact } from '../../duration.ts';
import { defaultStateDir } from '../../platform.ts';
import { redactText } from '../../redact.ts';
import type { SinkQueueStats, Store } from '../../store/index.ts';
import { emptySinkQueueStats } from '../../store/queue-stats.ts';

export interface StoreCommandOptions {
  stateDir?: string;
  config?: string;
}

/** What the store commands need from a config file (no secrets resolved). */
export interface StateConfig {
  stateDir: string;
  /** Configured sinks with their caps, in file order; undefined without --config. */
  sinks: Array<{ name: string; caps: { maxPendingRows: number; maxPendingBytes: number } }> | undefined;
  /** The --config file, if any. */
  configFile?: string | undefined;
}

/**
 * Reads `stateDir` and each sink's name and caps from a config file without validating (or resolving) the
 * sink types' own options, which hold the secrets. Throws ConfigError (exit code 2) naming a bad key.
 */
export async function readStateConfig(file: string): Promise<StateConfig> {
  const [{ ConfigError, readConfigFile }, { deliverySchema }] = await Promise.all([
    import('../../config/index.ts'),
    import('../../config/schema.ts'),
  ]);
  const raw = readConfigFile(file);
  const problems: string[] = [];
  let stateDir = defaultStateDir();
  if (raw.stateDir !== undefined) {
    if (typeof raw.stateDir === 'string' && raw.stateDir !== '') stateDir = raw.stateDir;
    else problems.push('stateDir: expected a directory path');
  }
  const sinks: NonNullable<StateConfig['sinks']> = [];
  const entries = raw.sinks ?? [];
  if (!Array.isArray(entries)) problems.push('sinks: expected a list of sinks');
  else {
    entries.forEach((entry: unknown, index) => {
      const sink = (typeof entry === 'object' && entry !== null ? entry : {}) as Record<string, unknown>;
      if (typeof sink.name !== 'string' || sink.name === '') {
        problems.push(`sinks[${index}].name: required (a sink name)`);
        return;
      }
      const delivery = deliverySchema.safeParse(sink.delivery ?? {});
      if (!delivery.success) {
        problems.push(`sinks[${index}].delivery: ${delivery.error.issues.map((i) => i.message).join('; ')}`);
        return;
      }
      sinks.push({ name: sink.name, caps: delivery.data.caps });
    });
  }
  if (problems.length > 0) throw new ConfigError(`invalid configuration (${file}):`, problems);
  return { stateDir, sinks };
}

/**
 * Print to stdout through the redactor: stored errors written before redaction existed, or by an older
 * version, never show a credential (credential-shaped text is always recognised; the store commands do not
 * resolve the config's secrets, see readStateConfig).
 */
export function print(text: string): void {
  process.stdout.write(redactText(text));
}

/** Add the options every store command takes. */
export function storeOptions(command: Command): Command {
  return command
    .option(
      '--state-dir <dir>',
      'state directory (default: the config file value, else the platform default)',
    )
    .option('--config <file>', 'forwarder config file (YAML) to take stateDir from');
}

/** --state-dir, else the config file's stateDir, else the platform default; plus the file's sinks. */
export async function resolveStateConfig(opts: StoreCommandOptions): Promise<StateConfig> {
  const fromFile = opts.config === undefined ? undefined : await readStateConfig(opts.config);
  return {
    stateDir: opts.stateDir ?? fromFile?.stateDir ?? defaultStateDir(),
    sinks: fromFile?.sinks,
    configFile: opts.config,
  };
}

/**
 * Open the store for inspection and run `fn`; undefined store means nothing was ever written there. A state
 * directory or database this user cannot read is an error (exit 1) naming the path, its owner and mode and the
 * fix (`command` is named in it), never "nothing pending".
 */
export async function withStore<T>(
  opts: StoreCommandOptions,
  access: { readOnly: boolean; command: string },
  fn: (store: Store | undefined, config: StateConfig) => T,
): Promise<T> {
  const [{ createLogger }, { openStoreForInspection }] = await Promise.all([
    import('../../log.ts'),
    import('../../store/index.ts'),
  ]);
  const logger = createLogger({ level: 'warn', pretty: false });
  const config = await resolveStateConfig(opts);
  const store = openStoreForInspection({
    stateDir: config.stateDir,
    logger,
    readOnly: access.readOnly,
    command: access.command,
  });
  try {
    return fn(store, config);
  } finally {
    store?.close();
  }
}

export function register(program: Command): void {
  const outbox = program.command('outbox').description('Inspect the durable outbox');
  storeOptions(
    outbox
      .command('status')
      .description('pending records per sink: count, bytes, oldest age, next attempt, dead letters')
      .option('--json', 'print JSON'),
  ).action(async (opts: StoreCommandOptions & { json?: boolean }) => {
    const now = Date.now();
    const { stats, configured } = await withStore(
      opts,
      { readOnly: true, command: 'outbox status' },
      (store, config) => ({
        stats: withConfiguredSinks(
          store?.stats() ?? [],
          config.sinks?.map((s) => s.name),
        ),
        configured: config.sinks === undefined ? undefined : new Set(config.sinks.map((s) => s.name)),
      }),
    );
    if (opts.json === true) {
      print(`${JSON.stringify(stats, null, 2)}\n`);
      return;
    }
    const pending = stats.reduce((n, s) => n + s.pending, 0);
    const nothing = pending === 0 && stats.every((s) => s.deadLetters === 0 && s.deadLettersDropped === 0);
    // Without --config there is nothing to list when nothing is pending; with it, every configured sink is listed.
    if (nothing && configured === undefined) {
      print('nothing pending\n');
      return;
    }
    for (const s of stats) {
      const parts = [`${s.sink}: ${s.pending} pending (${s.pendingBytes} bytes)`];
      if (s.oldestCreatedAt !== null)
        parts.push(`oldest ${formatDurationCompact(now - s.oldestCreatedAt)} old`);
      if (s.nextAttemptAt !== null) {
        parts.push(
          s.nextAttemptAt <= now
            ? 'next attempt now'
            : `next attempt in ${formatDurationCompact(s.nextAttemptAt - now)}`,
        );
      }
      if (s.headAttempts > 0) parts.push(`${s.headAttempts} failed attempts`);
      parts.push(`${s.deadLetters} dead letter${s.deadLetters === 1 ? '' : 's'}`);
      if (s.deadLettersDropped > 0)
        parts.push(`${s.deadLettersDropped} older dropped by the dead-letter cap`);
      print(`${parts.join(', ')}\n`);
      if (s.lastError !== null && s.pending > 0) print(`  last error: ${s.lastError}\n`);
      if (configured !== undefined && !configured.has(s.sink) && s.pending > 0) {
        print(
          `  not in ${opts.config}: these records wait here (nothing delivers them, nothing deletes them) until a ` +
            `sink named "${s.sink}" is configured again\n`,
        );
      }
    }
    if (nothing) print('nothing pending\n');
  });
}

/** A sink's queue statistics with `configured` set when the command was given --config. */
export type OutboxStatus = SinkQueueStats & { configured?: boolean };

/**
 * With --config (`configured`: the file's sink names, in file order), every configured sink, its queue at 0 when
 * the store has nothing for it (an idle sink, a new one, a state directory not created yet), then every other
 * sink that has rows; each marked `configured`. Without --config, the store's queues as they are.
 */
export function withConfiguredSinks(
  stats: readonly SinkQueueStats[],
  configured: readonly string[] | undefined,
): OutboxStatus[] {
  if (configured === undefined) return [...stats];
  const bySink = new Map(stats.map((s) => [s.sink, s]));
  const names = new Set(configured);
  return [
    ...[...names].map((sink) => ({ ...(bySink.get(sink) ?? emptySinkQueueStats(sink)), configured: true })),
    ...stats.filter((s) => !names.has(s.sink)).map((s) => ({ ...s, configured: false })),
  ];
}
