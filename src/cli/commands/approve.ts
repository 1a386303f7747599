/**
 * `approve <eventId...>`: manual approval — POST StartRequests for one or several events in one request.
 * With --dry-run it prints what it would approve and never POSTs. With --config the IMDS endpoint and
 * api-version come from the forwarder's configuration file (explicit --imds-endpoint / --api-version win).
 * See docs/approval.md ("Manual approval").
 */
import type { Command } from 'commander';
import { UsageError } from '../../errors.ts';
import { cliImdsClient, cliImdsError, type ImdsCliOptions, imdsOptions } from './events.ts';

type ApproveOptions = ImdsCliOptions & { dryRun?: boolean; config?: string };

/** The IMDS options of the command, taking endpoint and api-version from --config unless given explicitly. */
async function effectiveImdsOptions(opts: ApproveOptions, command: Command): Promise<ImdsCliOptions> {
  if (opts.config === undefined) return opts;
  const { loadConfig } = await import('../../config/index.ts');
  // Only the imds section is used: the sinks' secrets live in the service's environment, not the operator's shell.
  const config = loadConfig({ file: opts.config, allowMissingSecrets: true });
  const explicit = (name: string) => command.getOptionValueSource(name) === 'cli';
  return {
    imdsEndpoint: explicit('imdsEndpoint') ? opts.imdsEndpoint : config.imds.endpoint,
    apiVersion: explicit('apiVersion') ? opts.apiVersion : config.imds.apiVersion,
    timeout: opts.timeout,
  };
}

/**
 * IMDS answers 400 both for a malformed request and for an EventId it does not know. After a 400, read the
 * current document: ids missing from it are the cause (exit 2 naming them), not the api-version or endpoint.
 */
async function unknownEventIds(
  error: unknown,
  client: ReturnType<typeof cliImdsClient>,
  ids: string[],
): Promise<UsageError | undefined> {
  const { ImdsError } = await import('../../sources/imds-protocol/errors.ts');
  if (!(error instanceof ImdsError) || error.reason !== 'bad-request') return undefined;
  let listed: string[];
  try {
    listed = (await client.getScheduledEvents()).document.Events.map((e) => e.EventId);
  } catch {
    return undefined; // cannot tell: keep the original message
  }
  const known = new Set(listed.map((id) => id.toLowerCase()));
  const unknown = ids.filter((id) => !known.has(id.toLowerCase()));
  if (unknown.length === 0) return undefined;
  const which = unknown.length === 1 ? `EventId ${unknown[0]}` : `EventIds ${unknown.join(', ')}`;
  const current = listed.length === 0 ? 'it lists no events' : `it lists ${listed.join(', ')}`;
  return new UsageError(
    `${which} unknown to IMDS: not in the current Scheduled Events document (${current}; an event that ended is ` +
      'no longer listed); IMDS rejected the request. See the current events with `scheduled-events-forwarder events`.',
  );
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
      throw (await unknownEventIds(error, client, ids)) ?? cliImdsError(error);
    } finally {
      client.close();
    }
  });
}
