/**
 * exec sink: runs a configured command once per record, record JSON on stdin, key fields in SEF_* environment
 * variables. Exit 0 = delivered. Non-zero exit = retryable by default (configurable to permanent, globally or
 * per exit code). No shell is involved: `command` is the program, `args` its arguments.
 */
import type { LifecycleRecord } from '../../domain/index.ts';
import { CommandStartError, runCommand } from '../../process/run-command.ts';
import {
  abortedError,
  destinationError,
  invalidInputError,
  timeoutError,
  withFailedIndex,
} from '../delivery-errors.ts';
import { DeliveryError, type Sink } from '../types.ts';
import type { ExecSinkOptions } from './options.ts';

/**
 * The SEF_* environment variables describing one record. A NUL in a field (no process can receive one) becomes
 * U+FFFD when the command is started (envValue in src/process/run-command.ts).
 */
export function recordEnvironment(record: LifecycleRecord, sinkName: string): Record<string, string> {
  const d = record.data;
  return {
    SEF_RECORD_ID: record.id,
    SEF_RECORD_TYPE: record.type,
    SEF_RECORD_SOURCE: record.source,
    SEF_RECORD_TIME: record.time,
    SEF_TRANSITION: record.transition,
    SEF_EVENT_ID: d.EventId,
    SEF_EVENT_TYPE: d.EventType,
    SEF_EVENT_STATUS: d.EventStatus,
    SEF_EVENT_SOURCE: d.EventSource,
    SEF_RESOURCE_TYPE: d.ResourceType,
    SEF_RESOURCES: d.Resources.join(','),
    SEF_NOT_BEFORE: d.notBeforeUtc ?? '',
    SEF_DURATION_SECONDS: String(d.DurationInSeconds),
    SEF_AFFECTS_THIS_VM: d.affectsThisVm ? 'true' : 'false',
    SEF_VM_NAME: d.vm?.name ?? '',
    SEF_VM_ID: d.vm?.vmId ?? record.vmid ?? '',
    SEF_SINK_NAME: sinkName,
  };
}

/**
 * Start failures no record can get past (the command or its working directory missing, not executable): the
 * destination's. Others (EAGAIN, EMFILE, ENOMEM: out of resources for now) are retried.
 */
const NOT_STARTABLE: ReadonlySet<string> = new Set([
  'ENOENT',
  'EACCES',
  'EPERM',
  'ENOEXEC',
  'ENOTDIR',
  'EISDIR',
]);

/** Create an exec sink (exported for tests and reuse). */
export function createExecSink(name: string, options: ExecSinkOptions): Sink {
  return {
    name,
    maxBatch: 1,
    async deliver(batch, signal) {
      for (let i = 0; i < batch.length; i++) {
        try {
          await runOne(name, options, batch[i]!, signal);
        } catch (error) {
          // One run per record: a permanent failure names its record; the runs before it delivered theirs.
          throw withFailedIndex(error, i, batch.length);
        }
      }
    },
  };
}

async function runOne(name: string, options: ExecSinkOptions, record: LifecycleRecord, signal: AbortSignal) {
  let result: Awaited<ReturnType<typeof runCommand>>;
  try {
    result = await runCommand({
      command: options.command,
      args: options.args,
      stdin: `${JSON.stringify(record)}\n`,
      env: { ...options.env, ...recordEnvironment(record, name) },
      passEnv: options.passEnv,
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
      timeoutMs: options.timeoutMs,
      signal,
      maxOutputBytes: options.maxOutputBytes,
    });
  } catch (error) {
    if (error instanceof CommandStartError && error.permanent) {
      // Starting it again for this record can never work: dead-letter it, so the rows behind it are delivered.
      throw invalidInputError(
        `${error.message} (starting it again for this record cannot work: dead-lettered instead of retried)`,
        { cause: error },
      );
    }
    if (error instanceof CommandStartError && NOT_STARTABLE.has(error.code ?? '')) {
      // No record can start it: the operator installs or fixes the command; the sink pauses meanwhile and keeps
      // every record (nothing is lost, nothing to replay).
      throw destinationError(
        `${error.message} (${error.code}; permanent for the destination: fix: install the command or correct \`command\`/\`cwd\` — a full path, or a program on the service's PATH — and make it executable)`,
        'exec-start-failed',
        { cause: error },
      );
    }
    if (error instanceof CommandStartError) {
      // Out of processes, file descriptors or memory for now: retry.
      throw new DeliveryError(error.message, { retryable: true, code: 'exec-start-transient', cause: error });
    }
    throw error;
  }
  if (result.aborted) throw abortedError('command aborted (shutdown)');
  if (result.timedOut)
    throw timeoutError(`command "${options.command}" timed out after ${options.timeoutMs} ms`);
  if (result.exitCode === 0) return;
  const permanent =
    (result.exitCode !== null && options.permanentExitCodes.includes(result.exitCode)) ||
    options.nonZeroExit === 'permanent';
  const how =
    result.exitCode === null ? `was killed by ${result.signal}` : `exited with code ${result.exitCode}`;
  const stderr = result.stderr.trim().slice(-500);
  throw new DeliveryError(`command "${options.command}" ${how}${stderr ? `: ${stderr}` : ''}`, {
    retryable: !permanent,
    code: result.exitCode === null ? 'exec-signal' : `exec-exit-${result.exitCode}`,
  });
}
