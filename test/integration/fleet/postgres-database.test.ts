/**
 * The PostgreSQL fleet history database (src/fleet/history/postgres-database.ts) against a real PostgreSQL server
 * (test/support/postgres.ts: one per run, a fresh database per test), and Microsoft Entra authentication with
 * tokens issued by the project's IMDS simulator.
 */
import { execFile } from 'node:child_process';
import { inspect, promisify } from 'node:util';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import {
  ENTRA_POSTGRES_SCOPE,
  type EntraAccessToken,
  entraTokenSource,
  openPostgresDatabase,
  PostgresConnectionError,
  type TokenCredentialLike,
} from '../../../src/fleet/history/postgres-database.ts';
import type { SqlDatabase } from '../../../src/fleet/history/sql.ts';
import { decodeJwtPayload, type RunningSimulator, startSimulator } from '../../../src/simulator/index.ts';
import { adminQuery, createTestDatabase } from '../../support/postgres.ts';
import { waitFor } from '../../support/wait.ts';

const adminUrl = inject('pgAdminUrl');
let testDb: { name: string; url: string; drop(): Promise<void> };
const cleanups: (() => Promise<unknown>)[] = [];

beforeEach(async () => {
  testDb = await createTestDatabase(adminUrl);
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await testDb.drop();
});

async function open(options: Partial<Parameters<typeof openPostgresDatabase>[0]> = {}): Promise<SqlDatabase> {
  const db = await openPostgresDatabase({ url: testDb.url, ...options });
  cleanups.push(() => db.close());
  return db;
}

/** Backends of this test's database waiting for an advisory lock. */
async function advisoryWaiters(db: SqlDatabase): Promise<number> {
  const rows = await db.all(
    `SELECT count(*) AS n FROM pg_locks l JOIN pg_database d ON d.oid = l.database
     WHERE l.locktype = 'advisory' AND NOT l.granted AND d.datname = current_database()`,
  );
  return rows[0]?.n as number;
}

/** A promise and its resolve function (to make two transactions meet at a known point). */
function signal(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

const secretOf = (url: string): string => decodeURIComponent(new URL(url).password);

describe('queries', () => {
  it('numbers ? placeholders and returns bigint and numeric as numbers', async () => {
    const db = await open();
    await db.run('CREATE TABLE t (id bigint PRIMARY KEY, name text NOT NULL, amount numeric)');
    expect(
      await db.run('INSERT INTO t VALUES (?, ?, ?), (?, ?, ?)', [
        1,
        'a',
        '1.5',
        9_007_199_254_740_991n,
        'b',
        null,
      ]),
    ).toEqual({ changes: 2 });
    expect(await db.run('UPDATE t SET name = ? WHERE id = ?', ['c', 1])).toEqual({ changes: 1 });
    const rows = await db.all('SELECT id, name, amount FROM t WHERE name IN (?, ?) ORDER BY id', ['c', 'b']);
    expect(rows).toEqual([
      { id: 1, name: 'c', amount: 1.5 },
      { id: 9_007_199_254_740_991, name: 'b', amount: null },
    ]);
    const [counted] = await db.all('SELECT count(*) AS n, sum(id) AS s FROM t WHERE id > ?', [0]);
    expect(counted).toEqual({ n: 2, s: 9_007_199_254_740_992 });
    expect(typeof counted?.n).toBe('number');
  });

  it('parses bigint as a number in its own pool only, not in pg globally', async () => {
    await open();
    const plain = await adminQuery(testDb.url, 'SELECT count(*) AS n FROM pg_database WHERE datname = $1', [
      testDb.name,
    ]);
    expect(plain.rows[0].n).toBe('1');
  });

  it('describes the database without its password', async () => {
    const db = await open();
    const url = new URL(testDb.url);
    expect(db.description).toBe(`postgres://postgres@127.0.0.1:${url.port}/${testDb.name}`);
    expect(db.description).not.toContain(secretOf(testDb.url));
    expect(db.dialect).toBe('postgres');
  });

  it('refuses lockKey outside a transaction', async () => {
    const db = await open();
    await expect(db.lockKey('k')).rejects.toThrow(/only meaningful inside transaction/);
  });
});

describe('transactions', () => {
  it('commits when the function resolves and rolls back when it throws', async () => {
    const db = await open();
    await db.run('CREATE TABLE t (v text)');
    expect(
      await db.transaction(async (tx) => (await tx.run('INSERT INTO t VALUES (?)', ['kept'])).changes),
    ).toBe(1);
    const failure = new Error('boom');
    await expect(
      db.transaction(async (tx) => {
        await tx.run('INSERT INTO t VALUES (?)', ['rolled back']);
        expect(await tx.all('SELECT v FROM t ORDER BY v')).toHaveLength(2);
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await db.all('SELECT v FROM t')).toEqual([{ v: 'kept' }]);
  });

  it('retries the transaction that loses a real deadlock, and both finish', async () => {
    const db = await open();
    await db.run('CREATE TABLE acct (id int PRIMARY KEY, n int NOT NULL)');
    await db.run('INSERT INTO acct VALUES (1, 0), (2, 0)');
    const attempts = { a: 0, b: 0 };
    // The error each failed statement met, by transaction: what made transaction() run the function again.
    const failures = { a: [] as unknown[], b: [] as unknown[] };
    const finished = { a: signal(), b: signal() };
    const other = { a: 'b', b: 'a' } as const;
    /**
     * Transaction `who`: update row `first`, meet the other at the barrier (first attempt only), update row
     * `second`. A retry first waits until the other transaction has finished: otherwise it races the winner for
     * its first row and, under load, often takes it first and deadlocks again (seen: 4 and 5 attempts in 12 of
     * 300 runs), so the attempt count would be PostgreSQL's timing, not the retry's behaviour. (It waits only
     * while the other has not lost a deadlock itself, so a test that goes wrong fails instead of hanging.)
     */
    const transfer = (who: 'a' | 'b', first: number, second: number, barrier: () => Promise<void>) =>
      db
        .transaction(async (tx) => {
          attempts[who]++;
          if (attempts[who] > 1 && failures[other[who]].length === 0) await finished[other[who]].promise;
          const bump = async (id: number): Promise<void> => {
            try {
              await tx.run('UPDATE acct SET n = n + 1 WHERE id = ?', [id]);
            } catch (error) {
              failures[who].push((error as { code?: unknown }).code);
              throw error;
            }
          };
          await bump(first);
          if (attempts[who] === 1) await barrier();
          await bump(second);
          return who;
        })
        .finally(() => finished[who].resolve());
    const aHoldsRow1 = signal();
    const bHoldsRow2 = signal();
    const a = transfer('a', 1, 2, async () => {
      aHoldsRow1.resolve();
      await bHoldsRow2.promise;
    });
    const b = transfer('b', 2, 1, async () => {
      bHoldsRow2.resolve();
      await aHoldsRow1.promise;
    });
    expect(await Promise.all([a, b])).toEqual(['a', 'b']);
    // The first attempts deadlock for certain (each holds the row the other updates next); PostgreSQL ends one
    // of them with 40P01 (its detector takes one victim per cycle); transaction() runs that one again, once, and
    // both commit, each update applied once (the loser's first attempt rolled back).
    const lost = [...failures.a, ...failures.b];
    expect(lost).toEqual(['40P01']);
    expect(attempts.a + attempts.b).toBe(3);
    expect(attempts[failures.a.length === 1 ? 'a' : 'b']).toBe(2);
    expect(await db.all('SELECT id, n FROM acct ORDER BY id')).toEqual([
      { id: 1, n: 2 },
      { id: 2, n: 2 },
    ]);
  });

  it('does not retry other errors', async () => {
    const db = await open();
    let attempts = 0;
    await expect(
      db.transaction(async (tx) => {
        attempts++;
        await tx.all('SELECT * FROM missing_table');
      }),
    ).rejects.toMatchObject({ code: '42P01' });
    expect(attempts).toBe(1);
  });

  it('lockKey serialises two transactions on the same key, not on other keys', async () => {
    const db = await open();
    await db.run('CREATE TABLE log (seq serial PRIMARY KEY, who text NOT NULL)');
    const firstHolds = signal();
    const first = db.transaction(async (tx) => {
      await tx.lockKey('vm/0001');
      firstHolds.resolve();
      // Another key is not blocked by this one.
      await db.transaction(async (other) => {
        await other.lockKey('vm/0002');
        await other.run('INSERT INTO log (who) VALUES (?)', ['other key']);
      });
      // Hold the lock until the second transaction is seen waiting for it.
      await waitFor(
        async () => (await advisoryWaiters(db)) === 1,
        'the second transaction to wait for the key',
      );
      await tx.run('INSERT INTO log (who) VALUES (?)', ['first']);
    });
    await firstHolds.promise;
    const second = db.transaction(async (tx) => {
      await tx.lockKey('vm/0001');
      await tx.run('INSERT INTO log (who) VALUES (?)', ['second']);
    });
    await Promise.all([first, second]);
    expect((await db.all('SELECT who FROM log ORDER BY seq')).map((r) => r.who)).toEqual([
      'other key',
      'first',
      'second',
    ]);
  });
});

describe('withMigrationLock', () => {
  it('runs one migration at a time across pools (the second sees the first one’s schema)', async () => {
    const [one, two] = [await open({ applicationName: 'one' }), await open({ applicationName: 'two' })];
    const events: string[] = [];
    let inside = 0;
    const migrate = (name: string, db: SqlDatabase) =>
      db.withMigrationLock(async (tx) => {
        inside++;
        events.push(`${name} start`);
        const exists = await tx.all(`SELECT 1 FROM pg_tables WHERE tablename = 'schema_version'`);
        if (exists.length === 0) {
          await tx.run('CREATE TABLE schema_version (v int NOT NULL)');
          await tx.run('INSERT INTO schema_version VALUES (?)', [1]);
        }
        // The first one in holds the lock until the other pool is seen waiting for it.
        if (inside === 1) {
          await waitFor(async () => (await advisoryWaiters(db)) === 1, 'the other pool to wait for the lock');
        }
        events.push(`${name} end`);
        return exists.length === 0 ? 'migrated' : 'already migrated';
      });
    const results = await Promise.all([migrate('one', one), migrate('two', two)]);
    expect(results.sort()).toEqual(['already migrated', 'migrated']);
    const [firstName] = (events[0] ?? '').split(' ');
    const secondName = firstName === 'one' ? 'two' : 'one';
    expect(events).toEqual([
      `${firstName} start`,
      `${firstName} end`,
      `${secondName} start`,
      `${secondName} end`,
    ]);
    expect(await one.all('SELECT v FROM schema_version')).toEqual([{ v: 1 }]);
    // The lock was released: a later migration gets it at once.
    expect(await two.withMigrationLock(async () => 'again')).toBe('again');
  });

  it('rolls back and releases the lock when the migration throws', async () => {
    const db = await open();
    await expect(
      db.withMigrationLock(async (tx) => {
        await tx.run('CREATE TABLE half_done (v int)');
        throw new Error('migration failed');
      }),
    ).rejects.toThrow('migration failed');
    expect(await db.all(`SELECT 1 FROM pg_tables WHERE tablename = 'half_done'`)).toEqual([]);
    const other = await open();
    expect(await other.withMigrationLock(async () => 'free')).toBe('free');
  });
});

describe('connection errors name the problem and the fix, never the secret', () => {
  it('wrong password (in the URL or from the password option)', async () => {
    const url = new URL(testDb.url);
    const wrong = 'Wr0ng-Pa55word-do-not-print';
    url.password = wrong;
    for (const options of [{ url: url.toString() }, { url: testDb.url, password: async () => wrong }]) {
      const error = await openPostgresDatabase(options).then(
        () => new Error('connected'),
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(PostgresConnectionError);
      const message = (error as Error).message;
      expect(message).toContain('authentication failed');
      expect(message).toContain(`127.0.0.1:${url.port}/${testDb.name}`);
      expect(message).toContain('"postgres"');
      expect(message).toContain('check the user name and its password');
      expect(inspect(error, { depth: 10 })).not.toContain(wrong);
      expect(inspect(error, { depth: 10 })).not.toContain(secretOf(testDb.url));
    }
  });

  it('unreachable port', async () => {
    const url = new URL(testDb.url);
    // A port nothing listens on: bind one and close it.
    const { createServer } = await import('node:net');
    const server = createServer().listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const port = (server.address() as { port: number }).port;
    await new Promise((r) => server.close(r));
    url.port = String(port);
    const error = await openPostgresDatabase({ url: url.toString() }).then(
      () => new Error('connected'),
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(PostgresConnectionError);
    expect((error as Error).message).toMatch(
      new RegExp(
        `127\\.0\\.0\\.1:${port}/${testDb.name} as user "postgres": the server is unreachable \\(ECONNREFUSED\\)`,
      ),
    );
    expect((error as Error).message).toContain('check the host and port');
    expect(inspect(error, { depth: 10 })).not.toContain(secretOf(testDb.url));
  });

  it('missing database', async () => {
    const url = new URL(testDb.url);
    url.pathname = '/no_such_database';
    await expect(openPostgresDatabase({ url: url.toString() })).rejects.toThrow(
      /no_such_database as user "postgres": the database does not exist/,
    );
  });
});

describe('the pure JavaScript client', () => {
  const run = promisify(execFile);
  const script = `
import { createRequire } from 'node:module';
const { openPostgresDatabase } = await import(${JSON.stringify(new URL('../../../src/fleet/history/postgres-database.ts', import.meta.url).href)});
try {
  const db = await openPostgresDatabase({ url: process.env.TEST_DB_URL });
  const rows = await db.all('SELECT 1 AS one');
  await db.close();
  const loaded = Object.keys(createRequire(import.meta.url).cache).filter((p) => /pg-native|[\\\\/]pg[\\\\/]lib[\\\\/]native/.test(p));
  process.stdout.write(JSON.stringify({ rows, loaded }));
} catch (error) {
  process.stdout.write(JSON.stringify({ error: error.message }));
}`;
  const inChild = async (env: NodeJS.ProcessEnv): Promise<Record<string, unknown>> => {
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, TEST_DB_URL: testDb.url, ...env },
      timeout: 30_000,
    });
    return JSON.parse(stdout) as Record<string, unknown>;
  };

  it('never loads pg-native', async () => {
    expect(await inChild({})).toEqual({ rows: [{ one: 1 }], loaded: [] });
  });

  it('says what to do when NODE_PG_FORCE_NATIVE asks for it', async () => {
    expect(await inChild({ NODE_PG_FORCE_NATIVE: '1' })).toEqual({
      error: expect.stringContaining('unset NODE_PG_FORCE_NATIVE'),
    });
  });
});

describe('Microsoft Entra authentication (tokens from the IMDS simulator)', () => {
  let sim: RunningSimulator | undefined;
  afterEach(async () => {
    await sim?.close();
    sim = undefined;
  });

  /**
   * The managed identity token request @azure/identity makes on a VM (GET /metadata/identity/oauth2/token,
   * resource = the scope without /.default), against the simulator; like MSAL, the expiry is `expires_in`
   * from the test's clock.
   */
  function simulatorCredential(simulator: RunningSimulator, now: () => number): TokenCredentialLike {
    return {
      async getToken(scopes) {
        const scope = Array.isArray(scopes) ? (scopes[0] ?? '') : scopes;
        const resource = scope.replace(/\/\.default$/, '');
        const response = await fetch(
          `${simulator.url}/metadata/identity/oauth2/token?api-version=2018-02-01&resource=${encodeURIComponent(resource)}`,
          { headers: { Metadata: 'true' } },
        );
        if (!response.ok) throw new Error(`token endpoint answered ${response.status}`);
        const body = (await response.json()) as { access_token: string; expires_in: string };
        return { token: body.access_token, expiresOnTimestamp: now() + Number(body.expires_in) * 1000 };
      },
    };
  }

  it('connects with a token, and new connections get a fresh token once the cached one nears expiry', async () => {
    const simulator = await startSimulator({ timeScale: 0 });
    sim = simulator;
    let clockMs = Date.now();
    const now = () => clockMs;
    const source = entraTokenSource(simulatorCredential(simulator, now), { now });

    const role = `entra_${testDb.name}`;
    await adminQuery(adminUrl, `CREATE ROLE ${pg.escapeIdentifier(role)} LOGIN`);
    cleanups.push(() => adminQuery(adminUrl, `DROP ROLE IF EXISTS ${pg.escapeIdentifier(role)}`));
    const setPassword = (token: string) =>
      adminQuery(adminUrl, `ALTER ROLE ${pg.escapeIdentifier(role)} PASSWORD ${pg.escapeLiteral(token)}`);
    const entraUrl = new URL(testDb.url);
    entraUrl.username = role;
    entraUrl.password = '';

    const first: EntraAccessToken = await source.getToken();
    expect(decodeJwtPayload(first.token).aud).toBe('https://ossrdbms-aad.database.windows.net');
    await setPassword(first.token);
    const db = await open({ url: entraUrl.toString(), entra: source });
    const pids = new Set<number>();
    const [who] = await db.all('SELECT current_user AS who, pg_backend_pid() AS pid');
    expect(who?.who).toBe(role);
    pids.add(who?.pid as number);
    expect(await source.getToken()).toEqual(first); // cached
    expect(db.description).not.toContain(first.token);

    // The simulator's tokens carry their issue time in seconds: the next one differs once a second has passed.
    const firstIssuedAt = decodeJwtPayload(first.token).iat as number;
    await waitFor(() => Math.floor(Date.now() / 1000) > firstIssuedAt, 'the next second');
    // Less than 5 minutes of the first token's validity remain: the next connection needs a new token.
    clockMs = first.expiresOnTimestamp - 4 * 60 * 1000;
    const second = await source.getToken();
    expect(second.token).not.toBe(first.token);
    await setPassword(second.token);
    await expect(adminQuery(withPassword(entraUrl, first.token), 'SELECT 1')).rejects.toThrow(/password/);

    // While the transaction holds the pool's existing connection, the query needs a new one (password: token 2).
    await db.transaction(async (tx) => {
      const [outer] = await tx.all('SELECT pg_backend_pid() AS pid');
      const [inner] = await db.all('SELECT current_user AS who, pg_backend_pid() AS pid');
      expect(inner?.who).toBe(role);
      expect(inner?.pid).not.toBe(outer?.pid);
      expect(pids.has(inner?.pid as number)).toBe(false);
    });
    const tokenRequests = simulator.admin
      .requests()
      .log.filter((r) => r.endpoint === 'token' && r.status === 200);
    expect(tokenRequests).toHaveLength(2);
    expect(tokenRequests[0]?.path).toContain(
      encodeURIComponent(ENTRA_POSTGRES_SCOPE.replace('/.default', '')),
    );

    // A token the server does not accept: the error names the problem, never the token.
    await setPassword('something-else');
    const error = await openPostgresDatabase({ url: entraUrl.toString(), entra: source }).then(
      () => new Error('connected'),
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(PostgresConnectionError);
    expect((error as Error).message).toContain(`authentication failed at PostgreSQL at 127.0.0.1:`);
    expect((error as Error).message).toContain(`as user "${role}"`);
    expect(inspect(error, { depth: 10 })).not.toContain(second.token);
  });

  it('reports a credential that cannot get a token, without details of the token request', async () => {
    const source = entraTokenSource({
      getToken: async () => {
        throw new Error('ManagedIdentityCredential: no managed identity endpoint');
      },
    });
    await expect(openPostgresDatabase({ url: testDb.url, entra: source })).rejects.toThrow(
      /getting a Microsoft Entra access token failed \(Error\); check the credential/,
    );
  });
});

function withPassword(url: URL, password: string): string {
  const copy = new URL(url);
  copy.password = password;
  return copy.toString();
}
