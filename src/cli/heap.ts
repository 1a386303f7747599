/**
 * V8 sizing for `run`, a process that lives for years and does almost nothing between events. Applied by the
 * entry point itself (src/cli/main.ts, before the run command's modules load), so the package bin,
 * `npm start`, the systemd unit and the Windows service (node-windows forks packaging/windows/service-entry.mjs,
 * which calls main()) all get it without node flags.
 *
 * 1. Young generation. V8 starts with 1 MiB semi-spaces and doubles them, up to 16 MiB on 64-bit, whenever a
 *    scavenge finds many survivors, which start-up (loading modules, building the config schema) always does.
 *    Grown semi-spaces stay committed: ~10 MiB of resident memory an idle forwarder never uses again.
 *    `--max-semi-space-size` would cap them, but V8 reads it only when the heap is created (setting it from
 *    JavaScript has no effect: measured), so only the node command line or NODE_OPTIONS could pass it.
 *    `--semi-space-growth-factor` is read at every scavenge, so setting it in-process works on every platform:
 *    with 1 the semi-spaces stay at their initial 1 MiB.
 * 2. No optimizing JIT for one-shot start-up code. Start-up runs hot loops exactly once (the config schema, the
 *    SDKs of configured sinks); Maglev and TurboFan would compile them, and their machine code pages (several
 *    MiB of the node binary) would stay resident for the life of the process. They are switched off until the
 *    pipeline is ready (endStartup(), called from `run` when the store is open, the sinks built and the source
 *    about to start) and then switched back on, so polling and deliveries are optimized as usual.
 *
 * Measured by the footprint and drain benchmarks (docs/performance.md). An operator who passes any of these
 * flags on the command line or in NODE_OPTIONS keeps their setting (that part is then left alone).
 */
import { setFlagsFromString } from 'node:v8';

/** Set for the life of the process. */
export const LONG_RUN_V8_FLAGS = '--semi-space-growth-factor=1';
/** Set until endStartup(), then reverted with STARTUP_V8_FLAGS_OFF. */
export const STARTUP_V8_FLAGS = '--no-turbofan --no-maglev';
export const STARTUP_V8_FLAGS_OFF = '--turbofan --maglev';

let inStartup = false;

/** True when `pattern` appears in the node command line or NODE_OPTIONS (the operator chose). */
export function operatorSet(
  pattern: RegExp,
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string | undefined = process.env.NODE_OPTIONS,
): boolean {
  return execArgv.some((a) => pattern.test(a)) || pattern.test(nodeOptions ?? '');
}

/** Node/V8 options by which an operator sizes the young generation, or chooses the JIT, themselves. */
export const YOUNG_GENERATION_FLAGS = /semi[-_]space/;
export const JIT_FLAGS = /turbofan|maglev|[-_](no[-_])?opt\b|jitless|max[-_]opt/;

/** Applies the flags above (except those the operator set); see the module comment. */
export function sizeHeapForLongRun(): void {
  if (!operatorSet(YOUNG_GENERATION_FLAGS)) setFlagsFromString(LONG_RUN_V8_FLAGS);
  if (!operatorSet(JIT_FLAGS)) {
    setFlagsFromString(STARTUP_V8_FLAGS);
    inStartup = true;
  }
}

/** Start-up is over: optimizing compilers on again. Idempotent; a no-op when sizeHeapForLongRun() did not run. */
export function endStartup(): void {
  if (!inStartup) return;
  inStartup = false;
  setFlagsFromString(STARTUP_V8_FLAGS_OFF);
}

/** Whether the optimizing compilers are currently held off (tests). */
export function inStartupPhase(): boolean {
  return inStartup;
}
