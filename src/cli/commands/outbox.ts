/**
 * `outbox status`: what is pending per sink (count, bytes, oldest age, next attempt, last error) and how many
 * dead letters each sink has. Reads the state directory without locking it, so it works while the forwarder runs;
 * an empty or missing state directory answers "nothing pending" (exit 0) without creating anything.
 */
import type { Command } from 'commander';
import { defaultStateDir } from '../../platform.ts';
import { redactText } from '../../redact.ts';
import type { Store } from '../../store/index.ts';

export interface StoreCommandOptions {
  stateDir?: string;
  config?: string;
}

/**
 * Print to stdout through the redactor: stored errors written before redaction existed, or by an older
 * version, never show a credential (configured values are known when --config is given; credential-shaped
 * text always is).
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

/** The state directory: --state-dir, else the config file's stateDir, else the platform default. */
export async function resolveStateDirOption(opts: StoreCommandOptions): Promise<string> {
  if (opts.stateDir !== undefined) return opts.stateDir;
  if (opts.config !== undefined) {
    const { loadConfigForCli } = await import('../../config/index.ts');
    return loadConfigForCli({ config: opts.config }).stateDir;
  }
  return defaultStateDir();
}

/** Open the store for inspection and run `fn`; undefined store means nothing was ever written there. */
export async function withStore<T>(
  opts: StoreCommandOptions,
  readOnly: boolean,
  fn: (store: Store | undefined) => T,
): Promise<T> {
  const [{ createLogger }, { openStoreForInspection }] = await Promise.all([
    import('../../log.ts'),
    import('../../store/index.ts'),
  ]);
  const logger = createLogger({ level: 'warn', pretty: false });
  const stateDir = await resolveStateDirOption(opts);
  const store = openStoreForInspection({ stateDir, logger, readOnly });
  try {
    return fn(store);
  } finally {
    store?.close();
  }
}

/** "3h 12m", "45s", "2d 4h". */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${m}m`;
  if (m > 0) return `${m}m ${sec}s`;
  return `${sec}s`;
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
    const stats = await withStore(opts, true, (store) => store?.stats() ?? []);
    if (opts.json === true) {
      print(`${JSON.stringify(stats, null, 2)}\n`);
      return;
    }
    const pending = stats.reduce((n, s) => n + s.pending, 0);
    if (stats.length === 0 || (pending === 0 && stats.every((s) => s.deadLetters === 0))) {
      print('nothing pending\n');
      return;
    }
    for (const s of stats) {
      const parts = [`${s.sink}: ${s.pending} pending (${s.pendingBytes} bytes)`];
      if (s.oldestCreatedAt !== null) parts.push(`oldest ${formatDuration(now - s.oldestCreatedAt)} old`);
      if (s.nextAttemptAt !== null) {
        parts.push(
          s.nextAttemptAt <= now
            ? 'next attempt now'
            : `next attempt in ${formatDuration(s.nextAttemptAt - now)}`,
        );
      }
      if (s.headAttempts > 0) parts.push(`${s.headAttempts} failed attempts`);
      parts.push(`${s.deadLetters} dead letters`);
      print(`${parts.join(', ')}\n`);
      if (s.lastError !== null && s.pending > 0) print(`  last error: ${s.lastError}\n`);
    }
  });
}
