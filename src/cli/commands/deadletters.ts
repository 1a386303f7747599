/**
 * `deadletters list` and `deadletters replay`: records a sink rejected permanently or that went over a sink's
 * caps, kept with the error; replay moves them back to the end of their sink's queue (attempts reset). A running
 * forwarder picks replayed records up within its rescan interval (2 s by default).
 */
import type { Command } from 'commander';
import { UsageError } from '../errors.ts';
import { print, type StoreCommandOptions, storeOptions, withStore } from './outbox.ts';

export function register(program: Command): void {
  const dl = program.command('deadletters').description('List and replay dead-lettered records');

  storeOptions(
    dl
      .command('list')
      .description('list dead letters (id, sink, record id, reason, error)')
      .option('--sink <name>', 'only this sink')
      .option('--json', 'print JSON (full records)'),
  ).action(async (opts: StoreCommandOptions & { sink?: string; json?: boolean }) => {
    const rows = await withStore(opts, true, (store) =>
      store === undefined ? [] : store.listDeadLetters(opts.sink === undefined ? {} : { sink: opts.sink }),
    );
    if (opts.json === true) {
      print(`${JSON.stringify(rows, null, 2)}\n`);
      return;
    }
    if (rows.length === 0) {
      print('no dead letters\n');
      return;
    }
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
      .option('--id <id>', 'only this dead letter (see `deadletters list`)'),
  ).action(async (opts: StoreCommandOptions & { sink?: string; id?: string }) => {
    let id: number | undefined;
    if (opts.id !== undefined) {
      id = Number(opts.id);
      if (!Number.isInteger(id) || id <= 0)
        throw new UsageError(`--id: expected a dead-letter id (a positive integer), got "${opts.id}"`);
    }
    const moved = await withStore(opts, false, (store) =>
      store === undefined
        ? 0
        : store.replayDeadLetters({
            ...(opts.sink === undefined ? {} : { sink: opts.sink }),
            ...(id === undefined ? {} : { id }),
          }),
    );
    print(moved === 0 ? 'nothing to replay\n' : `replayed ${moved} dead letter(s)\n`);
  });
}
