/**
 * stdout sink: one CloudEvent JSON per line on standard output; acknowledged once the write is flushed.
 * When the reader of standard output goes away (`run | jq` and jq exits: EPIPE), the process keeps running:
 * every delivery fails retryably with a message that says so, and the records wait in the outbox.
 */
import type { Writable } from 'node:stream';
import { DeliveryError, type Sink } from '../types.ts';

/** Create a stdout sink writing to `stream` (default process.stdout). */
export function createStdoutSink(name: string, stream: Writable = process.stdout): Sink {
  let closedBy: NodeJS.ErrnoException | undefined;
  // Without a listener a closed pipe's 'error' event ends the process; the write callbacks report it instead.
  stream.on('error', (error: NodeJS.ErrnoException) => {
    closedBy ??= error;
  });
  const failure = (error: NodeJS.ErrnoException) => {
    const cause = closedBy ?? error;
    const closed = closedBy !== undefined || stream.destroyed || cause.code === 'EPIPE';
    const message = closed
      ? `standard output is closed (${cause.code ?? cause.message}): whatever read the forwarder's output has ` +
        'exited; the records stay in the outbox until a forwarder whose standard output is open delivers them ' +
        '(restart it with its output connected, or configure a file sink)'
      : `writing to stdout failed: ${error.message}`;
    return new DeliveryError(message, { retryable: true, code: 'stdout-write', cause });
  };
  return {
    name,
    maxBatch: 100,
    deliver(batch, signal) {
      if (signal.aborted) return Promise.reject(signal.reason);
      if (closedBy !== undefined || stream.destroyed)
        return Promise.reject(failure(closedBy ?? new Error('destroyed')));
      const text = batch.map((r) => `${JSON.stringify(r)}\n`).join('');
      return new Promise<void>((resolve, reject) => {
        stream.write(text, (error) => {
          if (error) reject(failure(error));
          else resolve();
        });
      });
    },
  };
}
