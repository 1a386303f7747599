/**
 * `events`: one-shot GET of the Scheduled Events document, printed as JSON (like the docs' curl example).
 */
import type { Command } from 'commander';
import { errorMessage, toError, UsageError } from '../../errors.ts';
import { ImdsClient } from '../../sources/imds/client.ts';
import { DEFAULT_API_VERSION, DEFAULT_IMDS_ENDPOINT } from '../../sources/imds/defaults.ts';
import { ImdsError } from '../../sources/imds-protocol/errors.ts';

export interface ImdsCliOptions {
  imdsEndpoint: string;
  apiVersion: string;
  timeout: string;
}

/** An ImdsClient for one-shot CLI commands; bad options become UsageErrors. */
export function cliImdsClient(opts: ImdsCliOptions): ImdsClient {
  const timeoutMs = Number(opts.timeout);
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
    throw new UsageError(`--timeout must be a positive number of milliseconds, got "${opts.timeout}"`);
  }
  try {
    return new ImdsClient({
      endpoint: opts.imdsEndpoint,
      apiVersion: opts.apiVersion,
      firstRequestTimeoutMs: timeoutMs,
      requestTimeoutMs: timeoutMs,
    });
  } catch (error) {
    throw new UsageError(errorMessage(error));
  }
}

/** IMDS 400s are configuration errors (exit 2); everything else is a runtime failure (exit 1). */
export function cliImdsError(error: unknown): Error {
  if (error instanceof ImdsError && error.reason === 'bad-request') return new UsageError(error.message);
  return toError(error);
}

/** Adds --imds-endpoint, --api-version and --timeout. */
export function imdsOptions(command: Command): Command {
  return command
    .option('--imds-endpoint <url>', "IMDS endpoint (e.g. the simulator's URL)", DEFAULT_IMDS_ENDPOINT)
    .option('--api-version <version>', 'Scheduled Events api-version', DEFAULT_API_VERSION)
    .option('--timeout <ms>', 'request timeout (the first call on a VM can take up to 2 minutes)', '120000');
}

export function register(program: Command): void {
  imdsOptions(
    program
      .command('events')
      .description(
        "Print the current Scheduled Events document as JSON (one GET, like the docs' curl example).",
      )
      .option('--normalized', "print the tolerant parser's normalized document instead of the raw answer"),
  ).action(async (opts: ImdsCliOptions & { normalized?: boolean }) => {
    const client = cliImdsClient(opts);
    try {
      const { document, body } = await client.getScheduledEvents();
      const out = opts.normalized ? document : (JSON.parse(body) as unknown);
      process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    } catch (error) {
      throw cliImdsError(error);
    } finally {
      client.close();
    }
  });
}
