/**
 * `approve <eventId...>`: manual approval — POST StartRequests for one or several events in one request.
 * With --dry-run it prints what it would approve and never POSTs. With --config the IMDS endpoint and
 * api-version come from the forwarder's configuration file (explicit --imds-endpoint / --api-version win).
 * See docs/approval.md ("Manual approval").
 */
import type { Command } from 'commander';
import { UsageError } from '../errors.ts';
import { cliImdsClient, cliImdsError, type ImdsCliOptions, imdsOptions } from './events.ts';

type ApproveOptions = ImdsCliOptions & { dryRun?: boolean; config?: string };

/** The IMDS options of the command, taking endpoint and api-version from --config unless given explicitly. */
async function effectiveImdsOptions(opts: ApproveOptions, command: Command): Promise<ImdsCliOptions> {
  if (opts.config === undefined) return opts;
  const { loadConfig } = await import('../../config/index.ts');
  const config = loadConfig({ file: opts.config });
  const explicit = (name: string) => command.getOptionValueSource(name) === 'cli';
  return {
    imdsEndpoint: explicit('imdsEndpoint') ? opts.imdsEndpoint : config.imds.endpoint,
    apiVersion: explicit('apiVersion') ? opts.apiVersion : config.imds.apiVersion,
    timeout: opts.timeout,
  };
}

export function register(program: Command): void {
  imdsOptions(
    program
      .command('approve')
      .description('Approve (start) Scheduled Events now: POST {"StartRequests":[{"EventId":...}]}.')
      .argument('<eventId...>', 'EventIds to approve (all in one request)')
      .option('--dry-run', 'print what would be approved and do not POST')
      .option('--config <file>', "take the IMDS endpoint and api-version from the forwarder's config file"),
  ).action(async (eventIds: string[], opts: ApproveOptions, command: Command) => {
    const ids = eventIds.map((id) => id.trim());
    const empty = ids.find((id) => id === '');
    if (empty !== undefined) throw new UsageError('an EventId must not be empty');
    const client = cliImdsClient(await effectiveImdsOptions(opts, command));
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
