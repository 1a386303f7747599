/**
 * `approve <eventId...>`: manual approval — POST StartRequests for one or several events in one request.
 * With --dry-run it reads the current document (a GET), refuses ids it does not list, prints what it would
 * approve and never POSTs. With --config the IMDS endpoint and
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

/** The error naming the ids the current document does not list, or undefined when it lists them all. */
function unknownIdsError(ids: readonly string[], listed: readonly string[]): UsageError | undefined {
  const known = new Set(listed.map((id) => id.toLowerCase()));
  const unknown = ids.filter((id) => !known.has(id.toLowerCase()));
  if (unknown.length === 0) return undefined;
  const which = unknown.length === 1 ? `EventId ${unknown[0]}` : `EventIds ${unknown.join(', ')}`;
  const current = listed.length === 0 ? 'it lists no events' : `it lists ${listed.join(', ')}`;
  return new UsageError(
    `${which} unknown to IMDS: not in the current Scheduled Events document (${current}; an event that ended is ` +
      'no longer listed). See the current events with `scheduled-events-forwarder events`.',
  );
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
  const unknown = unknownIdsError(ids, listed);
  return unknown === undefined ? undefined : new UsageError(`${unknown.message} IMDS rejected the request.`);
}

/**
 * --dry-run: reads the current document (a GET; nothing is POSTed) and prints what a real approval would start,
 * with each event's type, status and NotBefore; an id the document does not list is the same exit 2 as a real
 * approval of it.
 */
async function dryRun(client: ReturnType<typeof cliImdsClient>, ids: string[]): Promise<void> {
  const { Events } = (await client.getScheduledEvents()).document;
  const unknown = unknownIdsError(
    ids,
    Events.map((e) => e.EventId),
  );
  if (unknown !== undefined) throw unknown;
  const events = ids.map((id) => {
    const event = Events.find((e) => e.EventId.toLowerCase() === id.toLowerCase());
    return {
      EventId: event?.EventId ?? id,
      EventType: event?.EventType,
      EventStatus: event?.EventStatus,
      NotBefore: event?.NotBefore,
    };
  });
  process.stdout.write(
    `${JSON.stringify({ dryRun: true, wouldApprove: ids, url: client.scheduledEventsUrl, events })}\n`,
  );
}

export function register(program: Command): void {
  imdsOptions(
    program
      .command('approve')
      .description('Approve (start) Scheduled Events now: POST {"StartRequests":[{"EventId":...}]}.')
      .argument('<eventId...>', 'EventIds to approve (all in one request)')
      .option(
        '--dry-run',
        'check the ids against the current document and print what would be approved; do not POST',
      )
      .option('--config <file>', "take the IMDS endpoint and api-version from the forwarder's config file"),
  ).action(async (eventIds: string[], opts: ApproveOptions, command: Command) => {
    const ids = eventIds.map((id) => id.trim());
    const empty = ids.find((id) => id === '');
    if (empty !== undefined) throw new UsageError('an EventId must not be empty');
    const client = cliImdsClient(await effectiveImdsOptions(opts, command));
    try {
      if (opts.dryRun) {
        await dryRun(client, ids);
        return;
      }
      await client.approve(ids);
      process.stdout.write(`${JSON.stringify({ approved: ids })}\n`);
    } catch (error) {
      if (error instanceof UsageError) throw error;
      throw (await unknownEventIds(error, client, ids)) ?? cliImdsError(error);
    } finally {
      client.close();
    }
  });
}
