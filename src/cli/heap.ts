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
 *    with 1 the semi-spaces stay at their initial 1 MiB. It is 1 only during start-up: idle polling allocates
 *    too little to grow them again, while a backlog drain may (with 1 for good, the drain benchmark lost ~30 %
 *    on the OTel sink: many more scavenges and promotions).
 * 2. No optimizing JIT for one-shot start-up code. Start-up runs hot loops exactly once (the config schema, the
 *    SDKs of configured sinks); Maglev and TurboFan would compile them, and their machine code pages (several
 *    MiB of the node binary) would stay resident for the life of the process. They are switched off until the
 *    pipeline is ready (endStartup(), called from `run` when the store is open, the sinks built and the
 *    delivery engine started) and then switched back on, so polling and deliveries are optimized as usual.
 *
 * Measured by the footprint and drain benchmarks (docs/performance.md). An operator who passes any of these
 * flags on the command line or in NODE_OPTIONS keeps their setting (that part is then left alone).
 */
import { setFlagsFromString } from 'node:v8';

/** Young generation during start-up: the semi-spaces keep their initial 1 MiB (see the module comment). */
export const STARTUP_YOUNG_GENERATION = {
  on: '--semi-space-growth-factor=1',
  off: '--semi-space-growth-factor=2',
};
/** Optimizing compilers during start-up: off, then back on. */
export const STARTUP_JIT = { on: '--no-turbofan --no-maglev', off: '--turbofan --maglev' };

/** The flags to revert at endStartup() (those sizeHeapForLongRun() applied). */
let applied: string[] = [];

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

/** Applies the start-up settings (except those the operator chose); see the module comment. */
export function sizeHeapForLongRun(): void {
  applied = [];
  if (!operatorSet(YOUNG_GENERATION_FLAGS)) applied.push(STARTUP_YOUNG_GENERATION.off);
  if (!operatorSet(JIT_FLAGS)) applied.push(STARTUP_JIT.off);
  const on = [
    ...(applied.includes(STARTUP_YOUNG_GENERATION.off) ? [STARTUP_YOUNG_GENERATION.on] : []),
    ...(applied.includes(STARTUP_JIT.off) ? [STARTUP_JIT.on] : []),
  ];
  if (on.length > 0) setFlagsFromString(on.join(' '));
}

/** Start-up is over: V8's defaults again. Idempotent; a no-op when sizeHeapForLongRun() did not run. */
export function endStartup(): void {
  if (applied.length === 0) return;
  setFlagsFromString(applied.join(' '));
  applied = [];
}

/** Whether the optimizing compilers are currently held off (tests). */
export function inStartupPhase(): boolean {
  return applied.length > 0;
}
