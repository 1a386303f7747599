/**
 * Prepare / recover hooks: commands run (no shell) through the exec sink's runCommand, with the lifecycle
 * record on stdin, SEF_* variables in the environment, a timeout and bounded captured output that goes to the
 * logs.
 */

import type { ScheduledEvent } from '../domain/index.ts';
import type { Logger } from '../log.ts';
import { CommandStartError, runCommand } from '../process/run-command.ts';
import type { ApprovalHookResult } from '../transform/index.ts';
import type { HookConfig } from './config.ts';

export type HookPhase = 'prepare' | 'recover';

export interface HookRun {
  phase: HookPhase;
  event: ScheduledEvent;
  /** The lifecycle record written to stdin (JSON). */
  record: unknown;
  affectsThisVm: boolean;
  leader: boolean;
  vmName: string;
  /** The hook is killed after this long (already cut to fit the deadline). */
  timeoutMs: number;
  /** ISO time by which the hook must have finished (NotBefore − safety margin), if known. */
  deadline: string | null;
  maxOutputBytes: number;
  signal?: AbortSignal;
  logger: Logger;
}

/**
 * The variables a hook gets set: its own `env` and the SEF_* values (over the minimal environment it inherits,
 * plus its `passEnv`: see runCommand). A NUL in a value becomes U+FFFD.
 */
export function hookEnvironment(hook: HookConfig, run: HookRun): Record<string, string> {
  const { event } = run;
  return {
    ...hook.env,
    SEF_HOOK_NAME: hook.name,
    SEF_HOOK_PHASE: run.phase,
    SEF_EVENT_ID: event.EventId,
    SEF_EVENT_TYPE: event.EventType,
    SEF_EVENT_STATUS: event.EventStatus,
    SEF_EVENT_SOURCE: event.EventSource,
    SEF_NOT_BEFORE: event.notBeforeUtc ?? '',
    SEF_DURATION_SECONDS: String(event.DurationInSeconds),
    SEF_RESOURCES: event.Resources.join(','),
    SEF_AFFECTS_THIS_VM: String(run.affectsThisVm),
    SEF_LEADER: String(run.leader),
    SEF_VM_NAME: run.vmName,
    SEF_DEADLINE: run.deadline ?? '',
  };
}

/**
 * Built-in hooks (`builtin:` instead of `command:`), e.g. the Kubernetes node actions (src/kubernetes). They run
 * under the same rules as commands: order, deadline, abort signal, recorded result. `run.signal` aborts at the
 * hook's deadline (`run.timeoutMs` after the start) and when the forwarder stops: a built-in passes it to every
 * request it makes and returns at once when it aborts, with what it did so far in `detail`.
 */
export interface BuiltinHooks {
  run(hook: HookConfig, run: HookRun): Promise<ApprovalHookResult>;
}

/** The reason `run.signal` carries when a built-in hook's deadline passed (not when the forwarder stops). */
export class HookDeadlineError extends Error {
  constructor(timeoutMs: number) {
    super(`the hook's deadline passed (${timeoutMs} ms)`);
    this.name = 'HookDeadlineError';
  }
}

/** How long a built-in hook may take to return after its signal aborted before it is recorded without it. */
export const BUILTIN_STOP_GRACE_MS = 2000;

/**
 * Runs a built-in hook under its deadline, like runCommand runs a command: the signal it gets aborts at the
 * deadline (or when `run.signal` does), and the hook ends then — `timedOut: true` — even if the built-in does not
 * return (it gets BUILTIN_STOP_GRACE_MS to say what it did).
 */
async function runBuiltin(
  builtins: BuiltinHooks,
  hook: HookConfig,
  run: HookRun,
  budgetMs: number,
): Promise<ApprovalHookResult> {
  const started = performance.now();
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new HookDeadlineError(budgetMs)), budgetMs);
  const signal = run.signal === undefined ? deadline.signal : AbortSignal.any([deadline.signal, run.signal]);
  const running = builtins.run(hook, { ...run, signal });
  const stopped = new Promise<'no-answer'>((resolve) => {
    const afterAbort = () => setTimeout(() => resolve('no-answer'), BUILTIN_STOP_GRACE_MS).unref();
    if (signal.aborted) afterAbort();
    else signal.addEventListener('abort', afterAbort, { once: true });
  });
  try {
    const outcome = await Promise.race([running, stopped]);
    const timedOut = deadline.signal.aborted;
    const durationMs = Math.round(performance.now() - started);
    if (outcome === 'no-answer') {
      return {
        name: hook.name,
        ok: false,
        exitCode: null,
        durationMs,
        timedOut,
        detail: `${timedOut ? `timed out after ${budgetMs} ms` : 'stopped'}; the built-in hook did not return within ${BUILTIN_STOP_GRACE_MS} ms`,
      };
    }
    return timedOut ? { ...outcome, ok: false, timedOut: true } : outcome;
  } finally {
    clearTimeout(timer);
  }
}

/** Runs one hook and logs its (bounded) output. Never throws: a hook that cannot start is a failed hook. */
export async function runHook(
  hook: HookConfig,
  run: HookRun,
  builtins?: BuiltinHooks,
): Promise<ApprovalHookResult> {
  const log = run.logger.child({ hook: hook.name, phase: run.phase, eventId: run.event.EventId });
  const budgetMs = Math.max(0, Math.round(run.timeoutMs));
  if (run.timeoutMs <= 0) {
    log.warn('hook not run: no time left before NotBefore minus the safety margin');
    return { name: hook.name, ok: false, exitCode: null, durationMs: 0, timedOut: true, budgetMs };
  }
  log.info({ timeoutMs: run.timeoutMs, deadline: run.deadline }, 'running hook');
  if (hook.builtin !== undefined) {
    if (builtins === undefined) {
      log.error(`built-in hook "${hook.builtin}" is not available (set kubernetes.enabled: true)`);
      return { name: hook.name, ok: false, exitCode: null, durationMs: 0, timedOut: false, budgetMs };
    }
    const result = await runBuiltin(builtins, hook, run, budgetMs);
    if (result.ok) log.info({ durationMs: result.durationMs }, 'hook succeeded');
    else
      log.warn(
        { durationMs: result.durationMs, timedOut: result.timedOut, detail: result.detail },
        result.timedOut ? 'hook timed out' : 'hook failed',
      );
    return { ...result, budgetMs };
  }
  try {
    const result = await runCommand({
      command: hook.command ?? '',
      args: hook.args,
      stdin: `${JSON.stringify(run.record)}\n`,
      env: hookEnvironment(hook, run),
      passEnv: hook.passEnv,
      timeoutMs: run.timeoutMs,
      maxOutputBytes: run.maxOutputBytes,
      ...(run.signal === undefined ? {} : { signal: run.signal }),
    });
    const ok = result.exitCode === 0 && !result.timedOut && !result.aborted;
    const summary = {
      exitCode: result.exitCode,
      signal: result.signal,
      timedOut: result.timedOut,
      aborted: result.aborted,
      durationMs: Math.round(result.durationMs),
      stdout: result.stdout,
      stderr: result.stderr,
    };
    if (ok) log.info(summary, 'hook succeeded');
    else log.warn(summary, result.timedOut ? 'hook timed out' : 'hook failed');
    return {
      name: hook.name,
      ok,
      exitCode: result.exitCode,
      durationMs: Math.round(result.durationMs),
      timedOut: result.timedOut,
      budgetMs,
    };
  } catch (error) {
    if (!(error instanceof CommandStartError)) throw error;
    log.error({ err: error.message }, 'hook could not be started');
    return { name: hook.name, ok: false, exitCode: null, durationMs: 0, timedOut: false, budgetMs };
  }
}
