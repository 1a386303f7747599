/**
 * `deadletters list` and `deadletters replay`: records a sink rejected permanently or that went over a sink's
 * caps, kept with the error; replay moves them back to the end of their sink's queue (attempts reset). A running
 * forwarder picks replayed records up at its delivery engine's next rescan, within a minute (nothing notifies
 * it of another process's writes).
 *
 * An unknown --id or --sink is a usage error (exit 2). A replay that would push a sink's queue over its caps
 * (the oldest rows would go straight back to dead letters) is refused (exit 1) with the cap to raise and how many
 * fit now (--limit).
 */
import type { Command } from 'commander';
import { UsageError } from '../../errors.ts';
import type { DeadLetterAdmin, DeadLetterRow, SinkQueueStats } from '../../store/index.ts';
import { print, type StateConfig, type StoreCommandOptions, storeOptions, withStore } from './outbox.ts';

type Caps = { maxPendingRows: number; maxPendingBytes: number };

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

function positiveInteger(value: string | undefined, flag: string, what: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isInteger(n) || n <= 0)
    throw new UsageError(`${flag}: expected ${what} (a positive integer), got "${value}"`);
  return n;
}

/** Sinks that exist: configured ones (with --config) and every sink with pending rows or dead letters. */
function checkSinkExists(
  sink: string | undefined,
  stats: readonly SinkQueueStats[],
  config: StateConfig,
): void {
  if (sink === undefined) return;
  const known = new Set([...stats.map((s) => s.sink), ...(config.sinks ?? []).map((s) => s.name)]);
  if (known.has(sink)) return;
  const where =
    config.sinks === undefined
      ? `the state directory ${config.stateDir} has no records for it`
      : 'it is not configured and the state directory has no records for it';
  const list = known.size === 0 ? 'none' : [...known].sort().join(', ');
  throw new UsageError(`--sink: no sink named "${sink}": ${where} (known sinks: ${list})`);
}

function checkIdExists(
  store: DeadLetterAdmin | undefined,
  id: number | undefined,
  sink: string | undefined,
): void {
  if (id === undefined) return;
  const [row] = store?.listDeadLetters({ id }) ?? [];
  if (row === undefined) {
    throw new UsageError(`--id: no dead letter with id ${id} (see \`deadletters list\` for the ids)`);
  }
  if (sink !== undefined && row.sink !== sink) {
    throw new UsageError(`--id: dead letter ${id} belongs to sink "${row.sink}", not "${sink}"`);
  }
}

/**
 * Refuses a replay that would put a sink's queue over its caps: the engine would move the oldest rows straight
 * back to dead letters (reason overflow). Names the cap to raise and how many dead letters fit now.
 */
function checkCaps(
  rows: readonly DeadLetterRow[],
  stats: readonly SinkQueueStats[],
  config: StateConfig,
  defaults: Caps,
): void {
  const problems: string[] = [];
  for (const sink of [...new Set(rows.map((r) => r.sink))].sort()) {
    const configured = config.sinks?.find((s) => s.name === sink)?.caps;
    const caps = configured ?? defaults;
    const queue = stats.find((s) => s.sink === sink);
    const pending = queue?.pending ?? 0;
    const pendingBytes = queue?.pendingBytes ?? 0;
    const replay = rows.filter((r) => r.sink === sink);
    const bytes = replay.reduce((n, r) => n + r.bytes, 0);
    const overRows = pending + replay.length > caps.maxPendingRows;
    const overBytes = pendingBytes + bytes > caps.maxPendingBytes;
    if (!overRows && !overBytes) continue;
    let fit = 0;
    for (
      let rowsLeft = caps.maxPendingRows - pending, bytesLeft = caps.maxPendingBytes - pendingBytes;
      ;
      fit++
    ) {
      const next = replay[fit];
      if (next === undefined || rowsLeft < 1 || bytesLeft < next.bytes) break;
      rowsLeft -= 1;
      bytesLeft -= next.bytes;
    }
    const raise: string[] = [];
    if (overRows)
      raise.push(`maxPendingRows to at least ${pending + replay.length} (now ${caps.maxPendingRows})`);
    if (overBytes)
      raise.push(`maxPendingBytes to at least ${pendingBytes + bytes} (now ${caps.maxPendingBytes})`);
    const source =
      configured !== undefined
        ? `in ${config.configFile ?? 'the config file'}`
        : config.sinks === undefined
          ? '(these are the default caps; pass --config FILE to check the configured ones)'
          : '(default caps: the sink is not in the config file)';
    problems.push(
      `sink "${sink}": ${plural(pending, 'record')} pending (${pendingBytes} bytes) + ${plural(replay.length, 'dead letter')} ` +
        `(${bytes} bytes) would exceed its caps, and the oldest rows would move straight back to dead letters ` +
        `(reason overflow). Raise sinks[].delivery.caps ${raise.join(' and ')} for "${sink}" ${source} and restart ` +
        'the forwarder, ' +
        (fit > 0
          ? `or replay the oldest ${fit} now with --sink ${sink} --limit ${fit}`
          : 'or wait until the queue drains (see `outbox status`)'),
    );
  }
  if (problems.length > 0) throw new Error(`refusing to replay:\n  ${problems.join('\n  ')}`);
}

export function register(program: Command): void {
  const dl = program.command('deadletters').description('List and replay dead-lettered records');

  storeOptions(
    dl
      .command('list')
      .description('list dead letters (id, sink, record id, transition, reason, time, error)')
      .option('--sink <name>', 'only this sink')
      .option('--json', 'print JSON (full records)'),
  ).action(async (opts: StoreCommandOptions & { sink?: string; json?: boolean }) => {
    const { rows, dropped } = await withStore(
      opts,
      { readOnly: true, command: 'deadletters list' },
      (store, config) => {
        const stats = store?.stats() ?? [];
        checkSinkExists(opts.sink, stats, config);
        return {
          rows:
            store === undefined
              ? []
              : store.listDeadLetters(opts.sink === undefined ? {} : { sink: opts.sink }),
          dropped: stats.filter(
            (s) => s.deadLettersDropped > 0 && (opts.sink === undefined || s.sink === opts.sink),
          ),
        };
      },
    );
    if (opts.json === true) {
      print(`${JSON.stringify(rows, null, 2)}\n`);
      return;
    }
    // On stderr, so that the table on stdout stays a table: the list is not everything that was dead-lettered.
    for (const s of dropped) {
      process.stderr.write(
        `note: sink ${s.sink}: ${plural(s.deadLettersDropped, 'older dead letter')} dropped for good by its ` +
          'dead-letter cap (delivery.caps.maxDeadLetterRows / maxDeadLetterBytes); not listed, not replayable\n',
      );
    }
    if (rows.length === 0) {
      print(opts.sink === undefined ? 'no dead letters\n' : `no dead letters for sink ${opts.sink}\n`);
      return;
    }
    print('ID\tSINK\tRECORD ID\tTRANSITION\tREASON\tDEAD-LETTERED AT\tERROR\n');
    for (const r of rows) {
      print(
        `${r.id}\t${r.sink}\t${r.recordId}\t${r.record.type.split('.').pop()}\t${r.reason}\t` +
          `${new Date(r.deadLetteredAt).toISOString()}\t${r.error}\n`,
      );
    }
  });

  storeOptions(
    dl
      .command('replay')
      .description('move dead letters back to the outbox (end of the queue, attempts reset)')
      .option('--sink <name>', 'only this sink')
      .option('--id <id>', 'only this dead letter (see `deadletters list`)')
      .option('--limit <n>', 'only the oldest n matching dead letters'),
  ).action(async (opts: StoreCommandOptions & { sink?: string; id?: string; limit?: string }) => {
    const id = positiveInteger(opts.id, '--id', 'a dead-letter id');
    const limit = positiveInteger(opts.limit, '--limit', 'a number of dead letters');
    const { deliverySchema } = await import('../../config/schema.ts');
    const defaults: Caps = deliverySchema.parse({}).caps;
    const filter = {
      ...(opts.sink === undefined ? {} : { sink: opts.sink }),
      ...(id === undefined ? {} : { id }),
    };
    const moved = await withStore(
      opts,
      { readOnly: false, command: 'deadletters replay' },
      (store, config) => {
        const stats = store?.stats() ?? [];
        checkSinkExists(opts.sink, stats, config);
        checkIdExists(store, id, opts.sink);
        if (store === undefined) return 0;
        const rows = store.listDeadLetters({ ...filter, ...(limit === undefined ? {} : { limit }) });
        if (rows.length === 0) return 0;
        checkCaps(rows, stats, config, defaults);
        return store.replayDeadLetters({ ...filter, ...(limit === undefined ? {} : { limit }) });
      },
    );
    print(
      moved > 0
        ? `replayed ${plural(moved, 'dead letter')}\n`
        : opts.sink === undefined
          ? 'nothing to replay: there are no dead letters\n'
          : `nothing to replay: sink ${opts.sink} has no dead letters\n`,
    );
  });
}
