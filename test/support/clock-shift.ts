/**
 * Stepping a child process's wall clock at a moment the test controls (test/support/clock-shift-preload.ts):
 * `const shift = clockShift(dir)`; spawn with `shift.nodeArgs` and `shift.env`; `await shift.set(-6 * HOUR)`.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from './wait.ts';

const PRELOAD = join(import.meta.dirname, 'clock-shift-preload.ts');

export interface ClockShift {
  /** Node arguments for the child: `--import` of the preload. */
  nodeArgs: string[];
  /** Environment for the child: where the offset is read from. */
  env: Record<string, string>;
  /** Step the child's wall clock to real time + `offsetMs`; resolves once the child has taken it. */
  set(offsetMs: number): Promise<void>;
}

export function clockShift(dir: string): ClockShift {
  const file = join(dir, 'clock-offset-ms');
  writeFileSync(file, '0');
  return {
    nodeArgs: ['--import', PRELOAD],
    env: { SEF_TEST_CLOCK_SHIFT_FILE: file },
    async set(offsetMs: number) {
      writeFileSync(file, String(offsetMs));
      const applied = `${file}.applied`;
      await waitFor(
        () => (offsetMs === 0 && !existsSync(applied)) || readFileSync(applied, 'utf8') === String(offsetMs),
        `the child to step its wall clock by ${offsetMs} ms`,
      );
    },
  };
}
