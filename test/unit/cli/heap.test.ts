/**
 * src/cli/heap.ts: which node options count as the operator's own choice (then `run` leaves that part alone).
 * The flags' effect on a real `run` is checked in test/integration/cli/startup-imports.test.ts.
 */
import { describe, expect, it } from 'vitest';
import {
  EXPOSE_GC_FLAGS,
  endStartup,
  inStartupPhase,
  JIT_FLAGS,
  operatorSet,
  releaseStartupGarbage,
  YOUNG_GENERATION_FLAGS,
} from '../../../src/cli/heap.ts';
import { requestedCommand } from '../../../src/cli/main.ts';
import { waitFor } from '../../support/wait.ts';

describe('operator-set V8 options', () => {
  it('recognises young-generation sizing on the command line and in NODE_OPTIONS', () => {
    expect(operatorSet(YOUNG_GENERATION_FLAGS, ['--max-semi-space-size=4'], undefined)).toBe(true);
    expect(operatorSet(YOUNG_GENERATION_FLAGS, [], '--max_semi_space_size=8 --trace-gc')).toBe(true);
    expect(operatorSet(YOUNG_GENERATION_FLAGS, ['--max-old-space-size=256'], '--enable-source-maps')).toBe(
      false,
    );
  });

  it('recognises JIT choices, not look-alikes', () => {
    for (const flag of ['--no-opt', '--jitless', '--max-opt=2', '--no-turbofan', '--maglev', '--no_opt']) {
      expect(operatorSet(JIT_FLAGS, [flag], undefined), flag).toBe(true);
    }
    for (const flag of ['--optimize-for-size', '--stack-size=900', '--max-old-space-size=256']) {
      expect(operatorSet(JIT_FLAGS, [flag], undefined), flag).toBe(false);
    }
  });

  it('endStartup is a no-op unless run applied the start-up flags', () => {
    expect(inStartupPhase()).toBe(false);
    endStartup();
    expect(inStartupPhase()).toBe(false);
  });

  it('releaseStartupGarbage runs a full collection and leaves gc() unexposed (exposed for one context only)', async () => {
    const { runInNewContext } = process.getBuiltinModule('node:vm');
    const { constants, PerformanceObserver } = process.getBuiltinModule('node:perf_hooks');
    expect(operatorSet(EXPOSE_GC_FLAGS)).toBe(false);
    const majors: number[] = [];
    const observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        const { detail } = entry as { detail?: { kind?: number } };
        if (detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) {
          majors.push(entry.startTime);
        }
      }
    });
    observer.observe({ entryTypes: ['gc'] });
    const before = performance.now();
    releaseStartupGarbage();
    await waitFor(() => majors.some((t) => t >= before), 'a major collection after the call');
    observer.disconnect();
    expect(runInNewContext('typeof gc')).toBe('undefined');
    expect(typeof (globalThis as { gc?: unknown }).gc).toBe('undefined');
    expect(operatorSet(EXPOSE_GC_FLAGS, ['--expose-gc'], undefined)).toBe(true);
    expect(operatorSet(EXPOSE_GC_FLAGS, [], '--expose_gc')).toBe(true);
  });
});

describe('requestedCommand', () => {
  it('is the first argument when it names a command, else undefined (every command loads)', () => {
    expect(requestedCommand(['node', 'main.js', 'run', '--sink', 'stdout'])).toBe('run');
    expect(requestedCommand(['node', 'main.js', 'outbox', 'status'])).toBe('outbox');
    expect(requestedCommand(['node', 'main.js', '--help', 'run'])).toBeUndefined();
    expect(requestedCommand(['node', 'main.js', 'help', 'run'])).toBeUndefined();
    expect(requestedCommand(['node', 'main.js', 'rnu'])).toBeUndefined();
    expect(requestedCommand(['node', 'main.js', 'constructor'])).toBeUndefined();
    expect(requestedCommand(['node', 'main.js'])).toBeUndefined();
  });
});
