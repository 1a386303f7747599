/**
 * src/cli/heap.ts: which node options count as the operator's own choice (then `run` leaves that part alone).
 * The flags' effect on a real `run` is checked in test/integration/cli/startup-imports.test.ts.
 */
import { describe, expect, it } from 'vitest';
import {
  endStartup,
  inStartupPhase,
  JIT_FLAGS,
  operatorSet,
  YOUNG_GENERATION_FLAGS,
} from '../../../src/cli/heap.ts';
import { requestedCommand } from '../../../src/cli/main.ts';

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
