/**
 * A stopped forwarder exits even when a client it abandoned still holds the event loop open (e.g. an SDK that
 * did not close within its deadline after the service dropped the connection): a service stop never hangs.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const RUN = join(import.meta.dirname, '..', '..', '..', 'src', 'cli', 'commands', 'run.ts');

function exitOf(script: string): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stderr })));
}

describe('exitOnceStopped', () => {
  it('exits with the given code when a handle lingers, and says so', async () => {
    const { code, stderr } = await exitOf(
      `import { exitOnceStopped } from ${JSON.stringify(RUN)};
       import { createLogger } from ${JSON.stringify(join(RUN, '..', '..', '..', 'log.ts'))};
       setInterval(() => {}, 1000); // the lingering handle
       exitOnceStopped(createLogger({ pretty: false }), 3);`,
    );
    expect(code).toBe(3);
    expect(stderr).toContain('handles still open after the forwarder stopped; exiting now');
  });

  it('does not keep a clean process alive (no warning, natural exit)', async () => {
    const { code, stderr } = await exitOf(
      `import { exitOnceStopped } from ${JSON.stringify(RUN)};
       import { createLogger } from ${JSON.stringify(join(RUN, '..', '..', '..', 'log.ts'))};
       process.exitCode = 0;
       exitOnceStopped(createLogger({ pretty: false }), 0);`,
    );
    expect(code).toBe(0);
    expect(stderr).not.toContain('exiting now');
  });
});
