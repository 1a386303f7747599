/**
 * #30 item 1: a built-in hook runs under its deadline like a command hook (src/approval/hooks.ts runHook): its
 * signal aborts at the deadline, it ends then with `timedOut: true` — with the detail it gives when it honours the
 * signal, and on its own after BUILTIN_STOP_GRACE_MS when it does not.
 */
import { describe, expect, it } from 'vitest';
import {
  approvalSection,
  BUILTIN_STOP_GRACE_MS,
  type BuiltinHooks,
  HookDeadlineError,
  type HookRun,
  runHook,
} from '../../../src/approval/index.ts';
import { createLogger } from '../../../src/log.ts';
import { scheduledEvent } from './fixtures.ts';

const logger = createLogger({ level: 'silent' });
const hook = approvalSection.parse({ hooks: { prepare: [{ name: 'node', builtin: 'kubernetes-node' }] } })
  .hooks.prepare[0]!;
const run = (timeoutMs: number, signal?: AbortSignal): HookRun => ({
  phase: 'prepare',
  event: scheduledEvent(),
  record: {},
  affectsThisVm: true,
  leader: true,
  vmName: 'vm0',
  timeoutMs,
  deadline: null,
  maxOutputBytes: 1024,
  logger,
  ...(signal === undefined ? {} : { signal }),
});

/** A built-in that waits for its signal and then says what it did (as the Kubernetes node hook does). */
const honouring: BuiltinHooks = {
  run: (h, r) =>
    new Promise((resolve) => {
      r.signal!.addEventListener('abort', () =>
        resolve({
          name: h.name,
          ok: false,
          exitCode: null,
          durationMs: 0,
          timedOut: false,
          detail: `cordoned; ${(r.signal!.reason as Error).message}`,
        }),
      );
    }),
};

describe('built-in hooks under their deadline', () => {
  it('the signal aborts at the deadline with HookDeadlineError; the hook ends timed out with its detail', async () => {
    let reason: unknown;
    const result = await runHook(hook, run(50), {
      run: (h, r) => {
        r.signal!.addEventListener('abort', () => {
          reason = r.signal!.reason;
        });
        return honouring.run(h, r);
      },
    });
    expect(reason).toBeInstanceOf(HookDeadlineError);
    expect(result).toMatchObject({ name: 'node', ok: false, timedOut: true, budgetMs: 50 });
    expect(result.detail).toBe("cordoned; the hook's deadline passed (50 ms)");
  });

  it('a built-in that ignores its signal is ended anyway, grace period after the deadline', async () => {
    const result = await runHook(hook, run(50), { run: () => new Promise(() => {}) });
    expect(result).toMatchObject({ ok: false, timedOut: true, budgetMs: 50 });
    expect(result.detail).toContain(`did not return within ${BUILTIN_STOP_GRACE_MS} ms`);
    expect(result.durationMs).toBeGreaterThanOrEqual(50 + BUILTIN_STOP_GRACE_MS - 5);
  });

  it('the forwarder stopping aborts it too, but that is not a timeout', async () => {
    const stop = new AbortController();
    const running = runHook(hook, run(60_000, stop.signal), honouring);
    stop.abort();
    const result = await running;
    expect(result).toMatchObject({ ok: false, timedOut: false });
  });

  it('a hook that finishes in time keeps its own result', async () => {
    const result = await runHook(hook, run(60_000), {
      run: async (h) => ({
        name: h.name,
        ok: true,
        exitCode: null,
        durationMs: 1,
        timedOut: false,
        detail: 'drained',
      }),
    });
    expect(result).toMatchObject({ ok: true, timedOut: false, detail: 'drained', budgetMs: 60_000 });
  });
});
