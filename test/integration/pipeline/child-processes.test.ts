/**
 * What the commands the forwarder starts (exec sink, approval hooks) get, with real `run` child processes
 * against the IMDS simulator and real command children (test/support/dump-env.mjs, run with process.execPath so
 * it works on Windows too):
 * - a minimal environment, never the service's secrets: only the platform's base variables
 *   (childEnvironmentBaseNames in src/platform.ts), the `passEnv` names and `env`, plus the SEF_* values;
 * - a NUL in a record field (IMDS may send anything) is passed as U+FFFD instead of blocking the sink forever
 *   (Node refuses to spawn with a NUL in an environment value), and the records behind it are delivered.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { LifecycleRecord } from '../../../src/domain/index.ts';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import { createExecSink, execSinkFactory } from '../../../src/sinks/exec/index.ts';
import { REPO, spawnCli } from '../../support/child.ts';
import { makeRecord } from '../../support/delivery.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

const DUMP = join(REPO, 'test', 'support', 'dump-env.mjs');
const VM = 'sim-vm-0';

const tmp = makeTempDir('sef-children-');
afterAll(() => tmp.cleanup());
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

let counter = 0;
const path = (name: string) => join(tmp.dir, `${name}-${++counter}`);

interface Dump {
  env: Record<string, string>;
  stdin: LifecycleRecord;
}
const dumps = (file: string): Dump[] =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as Dump)
    : [];

const nonEmpty = <T>(list: T[]): T[] | undefined => (list.length > 0 ? list : undefined);

async function simulator(): Promise<RunningSimulator> {
  const sim = await startSimulator({ vmName: VM, timeScale: 0 });
  cleanups.push(() => sim.close());
  return sim;
}

/** Starts `run --config` (JSON is YAML) as a child process with `env` added to its environment. */
async function run(config: Record<string, unknown>, env: Record<string, string> = {}) {
  const file = path('config.yaml');
  writeFileSync(file, JSON.stringify({ stateDir: path('state'), ...config }));
  const fwd = spawnCli(['run', '--config', file], env);
  cleanups.push(async () => {
    fwd.child.kill('SIGKILL');
    await fwd.exited;
  });
  await fwd.ready;
  return fwd;
}

const dumpSink = (out: string, extra: Record<string, unknown> = {}) => ({
  name: 'dump',
  type: 'exec',
  command: process.execPath,
  args: [DUMP, out],
  ...extra,
});

describe('the environment of exec sinks and hooks', () => {
  it('holds no secret of the service environment: PATH, the passEnv names, env and SEF_* only', async () => {
    const sim = await simulator();
    const sinkOut = path('sink.jsonl');
    const hookOut = path('hook.jsonl');
    const secrets = {
      AZURE_CLIENT_SECRET: 'azure-client-secret-value-7f3a',
      SEF_SLACK_WEBHOOK: 'https://hooks.slack.example/services/T000/B000/secret-path-9c1d',
    };
    await run(
      {
        imds: { endpoint: sim.url, pollIntervalMs: 200 },
        sinks: [dumpSink(sinkOut, { passEnv: ['SEF_TEST_ALLOWED'], env: { SEF_TEST_SET: 'from-config' } })],
        approval: {
          rules: [{ name: 'all', match: {}, action: 'approve-after-hooks' }],
          hooks: {
            prepare: [
              {
                name: 'dump',
                command: process.execPath,
                args: [DUMP, hookOut],
                passEnv: ['SEF_TEST_ALLOWED'],
                env: { SEF_TEST_SET: 'from-hook-config' },
              },
            ],
          },
        },
      },
      { ...secrets, SEF_TEST_ALLOWED: 'allowed-value', SEF_TEST_NOT_ALLOWED: 'not-allowed-value' },
    );
    sim.admin.injectEvent({ id: 'E-ENV', type: 'Reboot', resources: [VM], noticeSeconds: 900 });
    const [sink] = await waitFor(() => nonEmpty(dumps(sinkOut)), 'the exec sink run');
    const [hook] = await waitFor(() => nonEmpty(dumps(hookOut)), 'the prepare hook run');

    for (const [who, child, set] of [
      ['exec sink', sink!, 'from-config'],
      ['prepare hook', hook!, 'from-hook-config'],
    ] as const) {
      const text = JSON.stringify(child.env);
      for (const value of Object.values(secrets)) expect(text, `${who} sees a secret`).not.toContain(value);
      expect(Object.keys(child.env), who).not.toContain('AZURE_CLIENT_SECRET');
      expect(Object.keys(child.env), who).not.toContain('SEF_SLACK_WEBHOOK');
      expect(child.env.SEF_TEST_NOT_ALLOWED, who).toBeUndefined();
      const pathName = Object.keys(child.env).find((k) => k.toUpperCase() === 'PATH');
      expect(pathName, `${who} has PATH`).toBeDefined();
      expect(child.env[pathName!], who).toBe(process.env[pathName!]);
      expect(child.env.SEF_TEST_ALLOWED, who).toBe('allowed-value');
      expect(child.env.SEF_TEST_SET, who).toBe(set);
      expect(child.env.SEF_EVENT_ID, who).toBe('E-ENV');
    }
    // Nothing but the base names, the passEnv name, env and SEF_* reached the children.
    const { childEnvironmentBaseNames } = await import('../../../src/platform.ts');
    const base = childEnvironmentBaseNames();
    const allowed = (name: string) =>
      name.startsWith('SEF_') ||
      base.some((p) =>
        p.endsWith('*') ? name.toUpperCase().startsWith(p.slice(0, -1)) : name.toUpperCase() === p,
      );
    // Node adds nothing; the platform's own additions (e.g. Windows' =C: drive variables) are not names we gave.
    expect(Object.keys(sink!.env).filter((k) => !allowed(k) && !k.startsWith('='))).toEqual([]);
    expect(Object.keys(hook!.env).filter((k) => !allowed(k) && !k.startsWith('='))).toEqual([]);
  });
});

describe('a NUL in a record field', () => {
  it('reaches the exec sink as U+FFFD (exact on stdin), and the records behind it are delivered', async () => {
    const sim = await simulator();
    const out = path('nul.jsonl');
    sim.admin.injectEvent({
      id: 'E-NUL',
      type: 'Reboot',
      eventSource: 'Platform\u0000injected',
      description: 'Host\u0000maintenance',
      resources: [VM],
      noticeSeconds: 900,
    });
    const fwd = await run({
      imds: { endpoint: sim.url, pollIntervalMs: 200 },
      sinks: [dumpSink(out)],
    });
    // The NUL record is committed (its poll answered) before the next event exists: it is ahead in the outbox.
    const polls = () => sim.admin.requests().log.filter((r) => r.endpoint === 'scheduledevents').length;
    const seen = polls();
    await waitFor(() => polls() >= seen + 2, 'two more polls');
    sim.admin.injectEvent({ id: 'E-AFTER', type: 'Reboot', resources: [VM], noticeSeconds: 900 });

    const delivered = await waitFor(() => {
      const lines = dumps(out);
      return lines.some((l) => l.stdin.subject === 'E-AFTER') ? lines : undefined;
    }, 'the record behind the NUL record');
    const subjects = delivered.map((l) => l.stdin.subject);
    expect(subjects.indexOf('E-NUL')).toBeGreaterThanOrEqual(0);
    expect(subjects.indexOf('E-NUL')).toBeLessThan(subjects.indexOf('E-AFTER'));
    const nul = delivered.find((l) => l.stdin.subject === 'E-NUL')!;
    expect(nul.env.SEF_EVENT_SOURCE).toBe('Platform\uFFFDinjected');
    expect(nul.stdin.data.EventSource).toBe('Platform\u0000injected');
    expect(nul.stdin.data.Description).toBe('Host\u0000maintenance');
    expect(fwd.stderr()).not.toContain('delivery failed; will retry');
  });

  it('a start Node refuses (an argument with NUL) is a permanent failure, dead-lettered, not retried forever', async () => {
    // The config schema refuses NUL in args (config-warnings.test.ts); built directly here, past the schema.
    const options = execSinkFactory.optionsSchema.parse({ command: process.execPath, args: [DUMP, 'x'] });
    const sink = createExecSink('bad', { ...options, args: [DUMP, 'a\u0000b'] });
    const error = await sink.deliver([makeRecord(1)], new AbortController().signal).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ name: 'DeliveryError', retryable: false, code: 'invalid-input' });
    expect((error as Error).message).toMatch(/cannot start command .*dead-lettered instead of retried/);
  });
});
