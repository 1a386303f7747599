/** stdout sink: one CloudEvent JSON per line on standard output; acknowledged once the write is flushed. */
import type { Writable } from 'node:stream';
import { DeliveryError, type Sink } from '../types.ts';

/** Create a stdout sink writing to `stream` (default process.stdout). */
export function createStdoutSink(name: string, stream: Writable = process.stdout): Sink {
  return {
    name,
    maxBatch: 100,
    deliver(batch, signal) {
      if (signal.aborted) return Promise.reject(signal.reason);
      const text = batch.map((r) => `${JSON.stringify(r)}\n`).join('');
      return new Promise<void>((resolve, reject) => {
        stream.write(text, (error) => {
          if (error) {
            reject(
              new DeliveryError(`writing to stdout failed: ${error.message}`, {
                retryable: true,
                code: 'stdout-write',
                cause: error,
              }),
            );
          } else resolve();
        });
      });
    },
  };
}
