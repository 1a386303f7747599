/**
 * stdout sink: one CloudEvent JSON per line on standard output; acknowledged once the write is flushed.
 * When the reader of standard output goes away (`run | jq` and jq exits: EPIPE), the process keeps running:
 * every delivery fails retryably with a message that says so, and the records wait in the outbox.
 */
import type { Writable } from 'node:stream';
import type { ForwarderEvent } from '../../domain/index.ts';
import { abortedError } from '../delivery-errors.ts';
import { DeliveryError, type Sink } from '../types.ts';

/** Create a stdout sink writing to `stream` (default process.stdout). */
export function createStdoutSink(name: string, stream: Writable = process.stdout): Sink {
  // Without a listener a closed pipe's 'error' event ends the process. The stream stays destroyed after it, so
  // later writes fail with ERR_STREAM_DESTROYED: their deliveries report the first error, the one that says why.
  let firstError: NodeJS.ErrnoException | undefined;
  stream.on('error', (error: NodeJS.ErrnoException) => {
    firstError ??= error;
  });
  const writeFailed = (error: NodeJS.ErrnoException) =>
    new DeliveryError(
      error.code === 'EPIPE' || stream.destroyed
        ? `standard output is closed (${error.code ?? error.message}): whatever read the forwarder's output has ` +
            'exited; the records stay in the outbox until a forwarder whose standard output is open delivers them ' +
            '(restart it with its output connected, or configure a file sink)'
        : `writing to stdout failed: ${error.message}`,
      { retryable: true, code: 'stdout-write', cause: error },
    );
  const write = (events: readonly ForwarderEvent[], signal: AbortSignal): Promise<void> => {
    if (signal.aborted) return Promise.reject(abortedError(`stdout sink ${name}: delivery aborted`));
    const text = events.map((r) => `${JSON.stringify(r)}\n`).join('');
    return new Promise<void>((resolve, reject) => {
      stream.write(text, (error) => (error ? reject(writeFailed(firstError ?? error)) : resolve()));
    });
  };
  return {
    name,
    maxBatch: 100,
    deliver: write,
    sendHeartbeat: (heartbeat, signal) => write([heartbeat], signal),
  };
}
