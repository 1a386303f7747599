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
 * 3. One memory-reducing collection when start-up is over (endStartup()). Start-up leaves the old generation's
 *    pages part empty (objects promoted while the config schema, the store and the sinks were built, dead
 *    since), and V8 keeps such pages: a regular full GC frees the objects, not the pages (measured: no change in
 *    resident memory). V8's last-resort collection compacts every page and returns the emptied ones to the OS:
 *    3.7 MiB less anonymous memory on an idle `run --sink stdout`. It has no API, so gc() is exposed for one
 *    new context (`--expose-gc` applies to contexts created afterwards) and the flag reverted at once; it runs
 *    once, synchronously, after the first Scheduled Events request went out (about 40 ms on the 2-core test
 *    machine).
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
/** Between sizeHeapForLongRun() and endStartup(). */
let starting = false;

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
  starting = true;
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
  if (!starting) return;
  starting = false;
  if (applied.length > 0) setFlagsFromString(applied.join(' '));
  applied = [];
  releaseStartupGarbage();
}

type GcFunction = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

/** Node/V8 options by which an operator exposes gc() themselves (then it is used and left exposed). */
export const EXPOSE_GC_FLAGS = /expose[-_]gc/;

/**
 * V8's last-resort (memory-reducing) full collection, once (item 3 of the module comment). An operator who
 * exposes gc() themselves keeps it exposed.
 */
export function releaseStartupGarbage(): void {
  const exposed = operatorSet(EXPOSE_GC_FLAGS);
  if (!exposed) setFlagsFromString('--expose-gc');
  const gc = (
    exposed ? (globalThis as { gc?: unknown }).gc : process.getBuiltinModule('node:vm').runInNewContext('gc')
  ) as GcFunction | undefined;
  if (!exposed) setFlagsFromString('--no-expose-gc');
  gc?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

/** Whether the optimizing compilers are currently held off (tests). */
export function inStartupPhase(): boolean {
  return applied.length > 0;
}
