/**
 * file sink: one CloudEvent JSON per line, fsynced before the batch is acknowledged, with size-based rotation
 * (`path` → `path.1` → … → `path.<maxFiles>`, oldest removed). A line torn by a crash is never glued to the
 * next record: a missing trailing newline is restored before appending.
 */
import { mkdir, open, rename, stat, unlink } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { ForwarderEvent } from '../../domain/index.ts';
import { errorMessage } from '../../errors.ts';
import { currentPlatform } from '../../platform.ts';
import { abortedError } from '../delivery-errors.ts';
import { DeliveryError, type Sink } from '../types.ts';
import type { FileSinkOptions } from './options.ts';

/** Create a file sink (exported for tests and reuse). Heartbeats (when on) are lines like the records'. */
export function createFileSink(name: string, options: FileSinkOptions): Sink {
  const path = resolve(options.path);
  const append = async (events: readonly ForwarderEvent[], signal: AbortSignal): Promise<void> => {
    if (signal.aborted) throw abortedError(`file sink ${name}: delivery aborted`);
    const text = events.map((r) => `${JSON.stringify(r)}\n`).join('');
    try {
      await appendDurably(path, text, options);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'error';
      throw new DeliveryError(`writing ${path} failed: ${errorMessage(error)}`, {
        retryable: true,
        code: `file-${code}`,
        cause: error,
      });
    }
  };
  return {
    name,
    maxBatch: 100,
    deliver: append,
    sendHeartbeat: (heartbeat, signal) => append([heartbeat], signal),
  };
}

async function appendDurably(path: string, text: string, options: FileSinkOptions): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  let size = await sizeOf(path);
  if (size > 0 && size + Buffer.byteLength(text) > options.maxBytes) {
    await rotate(path, options.maxFiles);
    size = 0;
  }
  const handle = await open(path, 'a+', 0o600);
  try {
    let prefix = '';
    if (size > 0) {
      const last = Buffer.alloc(1);
      await handle.read(last, 0, 1, size - 1);
      if (last[0] !== 0x0a) prefix = '\n'; // a torn line from a crash: keep it on its own line
    }
    await handle.write(prefix + text);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function sizeOf(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw error;
  }
}

/** path.N-1 → path.N … path → path.1; the oldest beyond maxFiles is removed. */
async function rotate(path: string, maxFiles: number): Promise<void> {
  await unlink(`${path}.${maxFiles}`).catch(() => {});
  for (let i = maxFiles - 1; i >= 1; i--) {
    await rename(`${path}.${i}`, `${path}.${i + 1}`).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
  }
  await rename(path, `${path}.1`);
  await syncDirectory(dirname(path));
}

/** Make renames durable (POSIX only; Windows cannot open a directory for fsync). */
async function syncDirectory(dir: string): Promise<void> {
  if (currentPlatform() === 'windows') return;
  try {
    const handle = await open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // best effort: some filesystems refuse directory fsync
  }
}
