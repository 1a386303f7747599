/**
 * `approve <eventId...>`: POST StartRequests for one or several events. With --dry-run it prints what it
 * would approve and never POSTs.
 */
import type { Command } from 'commander';
import { UsageError } from '../errors.ts';
import { cliImdsClient, cliImdsError, type ImdsCliOptions, imdsOptions } from './events.ts';

export function register(program: Command): void {
  imdsOptions(
    program
      .command('approve')
      .description('Approve (start) Scheduled Events now: POST {"StartRequests":[{"EventId":...}]}.')
      .argument('<eventId...>', 'EventIds to approve')
      .option('--dry-run', 'print what would be approved and do not POST'),
  ).action(async (eventIds: string[], opts: ImdsCliOptions & { dryRun?: boolean }) => {
    const ids = eventIds.map((id) => id.trim());
    const empty = ids.find((id) => id === '');
    if (empty !== undefined) throw new UsageError('an EventId must not be empty');
    const client = cliImdsClient(opts);
    try {
      if (opts.dryRun) {
        process.stdout.write(
          `${JSON.stringify({ dryRun: true, wouldApprove: ids, url: client.scheduledEventsUrl })}\n`,
        );
        return;
      }
      await client.approve(ids);
      process.stdout.write(`${JSON.stringify({ approved: ids })}\n`);
    } catch (error) {
      throw cliImdsError(error);
    } finally {
      client.close();
    }
  });
}
