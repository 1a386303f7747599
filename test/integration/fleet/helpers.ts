/** Fleet integration helpers: Azurite (blob) from npm on 127.0.0.1, and the fleet CLI as a child process. */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const ROOT = join(import.meta.dirname, '..', '..', '..');
/** Azurite is a test-only server installed apart from the project's dependencies (scripts/dev-install.ts). */
const AZURITE_BLOB = join(ROOT, 'test-servers', 'node_modules', '.bin', 'azurite-blob');
const MAIN = join(ROOT, 'src', 'cli', 'main.ts');

/** The well-known Azurite development account (public, documented by Microsoft). */
const DEV_ACCOUNT = 'devstoreaccount1';
const DEV_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

export interface RunningAzurite {
  port: number;
  connectionString: string;
  close(): Promise<void>;
}

/** Starts azurite-blob on 127.0.0.1 (any free port, data in the given temp location) and waits until it listens. */
export async function startAzurite(location: string): Promise<RunningAzurite> {
  if (!existsSync(AZURITE_BLOB)) {
    throw new Error(
      `${AZURITE_BLOB} is missing: \`npm ci\` installs the test servers (or run \`node scripts/dev-install.ts\`)`,
    );
  }
  const child = spawn(
    AZURITE_BLOB,
    [
      '--blobHost',
      '127.0.0.1',
      '--blobPort',
      '0',
      '--location',
      location,
      '--skipApiVersionCheck',
      '--loose',
      '--silent',
      // Azurite sends usage telemetry to Microsoft unless told not to; tests talk to 127.0.0.1 only.
      '--disableTelemetry',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stderr.on('data', (d: Buffer) => {
    output += d.toString();
  });
  const port = await new Promise<number>((resolve, reject) => {
    const onData = (d: Buffer) => {
      output += d.toString();
      const m = /listens on http:\/\/127\.0\.0\.1:(\d+)/.exec(output);
      if (m) {
        child.stdout.off('data', onData);
        resolve(Number(m[1]));
      }
    };
    child.stdout.on('data', onData);
    child.once('exit', (code) => reject(new Error(`azurite-blob exited with ${code}: ${output}`)));
  });
  return {
    port,
    connectionString:
      `DefaultEndpointsProtocol=http;AccountName=${DEV_ACCOUNT};AccountKey=${DEV_KEY};` +
      `BlobEndpoint=http://127.0.0.1:${port}/${DEV_ACCOUNT};`,
    close: async () => {
      if (child.exitCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
}

export interface FleetChild {
  child: ChildProcess;
  /** The JSON line `fleet run` prints once subscribed. */
  ready: Promise<{ dashboard: string | null; database: string; consumerGroup: string }>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
}

/**
 * Spawns `node src/cli/main.ts fleet run ...args` with `env` added, in `cwd` (default: this process's; several
 * consumers in their own directories stand for consumers on different hosts).
 */
export function spawnFleet(
  args: string[],
  env: Record<string, string>,
  options: { cwd?: string } = {},
): FleetChild {
  const child = spawn(process.execPath, [MAIN, 'fleet', 'run', ...args], {
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const ready = new Promise<{ dashboard: string | null; database: string; consumerGroup: string }>(
    (resolve, reject) => {
      const lines = createInterface({ input: child.stdout! });
      lines.once('line', (line) => resolve(JSON.parse(line)));
      void exited.then(({ code }) => reject(new Error(`fleet exited (${code}) before ready: ${err}`)));
    },
  );
  ready.catch(() => undefined);
  return { child, ready, exited, stderr: () => err };
}
