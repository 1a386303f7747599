/**
 * The PostgreSQL fleet history store's database (sql.ts): a node-postgres pool behind `SqlDatabase`, for several
 * consumer hosts sharing one server. Pure JavaScript client: `pg-native` is never loaded.
 *
 * - `?` placeholders are numbered `$1..$n` (numberPlaceholders).
 * - bigint (int8, count(*)) and numeric come back as JS numbers, for this pool only (not pg's global parsers).
 * - Queries and statements use client.query's callback form (query(): results die young; see there).
 * - transaction(): BEGIN / fn / COMMIT on one pooled connection, ROLLBACK on error; the whole function is retried
 *   on a serialization failure (40001) or deadlock (40P01), with a small jittered backoff, a bounded number of
 *   times.
 * - Passwords and Microsoft Entra tokens never appear in `description` or in any error this module builds.
 * - Microsoft Entra (Azure Database for PostgreSQL flexible server): the password of every new connection is an
 *   access token from `entra` (entraTokenSource caches it and fetches a new one when less than 5 minutes remain).
 */
import type { Pool, PoolClient, PoolConfig, QueryResult } from 'pg';
import { parseIntoClientConfig } from 'pg-connection-string';
import { fullJitterBackoffMs } from '../../backoff.ts';
import { sleep, systemClock } from '../../clock.ts';
import { errorMessage, toError } from '../../errors.ts';
import type { SqlDatabase, SqlExecutor, SqlRow, SqlValue } from './sql.ts';

/** Scope of Azure Database for PostgreSQL access tokens (Microsoft Entra authentication). */
export const ENTRA_POSTGRES_SCOPE = 'https://ossrdbms-aad.database.windows.net/.default';

/** A fresh access token is fetched when the cached one has less than this left. */
export const TOKEN_REFRESH_MARGIN_MS = 5 * 60 * 1000;

/**
 * Key of the session advisory lock held while migrating the schema (withMigrationLock): the ASCII bytes of
 * "SEFHIST1" as a signed 64-bit integer, fixed for this project.
 */
export const MIGRATION_LOCK_KEY = '6000279354822841393';

/** Attempts of a transaction that keeps losing serialization or deadlock races before its error is thrown. */
export const MAX_TRANSACTION_ATTEMPTS = 10;

const RETRY_BACKOFF = { initialMs: 5, maxMs: 250 };
const RETRYABLE_SQLSTATES = new Set(['40001', '40P01']);
const INT8_OID = 20;
const NUMERIC_OID = 1700;

/** An access token and when it expires (ms since the epoch), as @azure/identity returns it. */
export interface EntraAccessToken {
  token: string;
  expiresOnTimestamp: number;
}

/** Where new connections get their Microsoft Entra access token (entraTokenSource). */
export interface EntraTokenSource {
  getToken(): Promise<EntraAccessToken>;
}

/** The part of an @azure/identity TokenCredential (src/azure/credentials.ts createCredential) used here. */
export interface TokenCredentialLike {
  getToken(scopes: string | string[]): Promise<EntraAccessToken | null>;
}

export interface PostgresDatabaseOptions {
  /** postgres://user[:password]@host:port/database[?sslmode=…]. */
  url: string;
  /** The password of every new connection (instead of one in the URL). */
  password?: () => string | Promise<string>;
  /** Microsoft Entra authentication: every new connection's password is a token from here (entraTokenSource). */
  entra?: EntraTokenSource;
  /** Connections in the pool (default 4). */
  poolSize?: number;
  /** application_name, shown in pg_stat_activity. */
  applicationName?: string;
}

/**
 * Numbers the `?` placeholders of `sql` as `$1..$n` for PostgreSQL. Question marks inside single-quoted
 * literals and double-quoted identifiers are left alone (the shared SQL has none, but they stay correct).
 */
export function numberPlaceholders(sql: string): string {
  let n = 0;
  return sql.replace(/'(?:[^']|'')*'|"(?:[^"]|"")*"|\?/g, (match) => (match === '?' ? `$${++n}` : match));
}

/** The URL without its password (user, host, port, database and other parameters kept). */
export function describePostgresUrl(url: string): string {
  const parsed = parseUrl(url);
  parsed.password = '';
  parsed.searchParams.delete('password');
  return parsed.toString();
}

/**
 * A token source for Azure Database for PostgreSQL from an @azure/identity credential: asks for the
 * `https://ossrdbms-aad.database.windows.net/.default` scope, caches the token, and fetches a new one when less
 * than 5 minutes of validity remain (concurrent callers share one request). When a refresh fails while the
 * cached token is still valid, the cached token is used. `now` is for tests.
 */
export function entraTokenSource(
  credential: TokenCredentialLike,
  { now = Date.now }: { now?: () => number } = {},
): EntraTokenSource {
  let cached: EntraAccessToken | undefined;
  let pending: Promise<EntraAccessToken> | undefined;
  const fetchToken = async (): Promise<EntraAccessToken> => {
    const token = await credential.getToken(ENTRA_POSTGRES_SCOPE);
    if (!token?.token) {
      throw new Error(`the credential returned no access token for ${ENTRA_POSTGRES_SCOPE}`);
    }
    cached = { token: token.token, expiresOnTimestamp: token.expiresOnTimestamp };
    return cached;
  };
  return {
    async getToken() {
      if (cached && cached.expiresOnTimestamp - now() > TOKEN_REFRESH_MARGIN_MS) return cached;
      pending ??= fetchToken().finally(() => {
        pending = undefined;
      });
      try {
        return await pending;
      } catch (error) {
        if (cached && cached.expiresOnTimestamp > now()) return cached;
        throw error;
      }
    },
  };
}

/** Thrown (inside pg's connect) when the token source fails; turned into a connection error below. */
class EntraTokenError extends Error {
  readonly reason: unknown;
  constructor(reason: unknown) {
    super('could not get a Microsoft Entra access token');
    this.name = 'EntraTokenError';
    this.reason = reason;
  }
}

/** A PostgreSQL connection or authentication failure, described without the password or token. */
export class PostgresConnectionError extends Error {
  readonly code: string | undefined;
  constructor(message: string, code: string | undefined) {
    super(message);
    this.name = 'PostgresConnectionError';
    this.code = code;
  }
}

/** Opens a pool on `options.url` and checks that a connection can be made (throws PostgresConnectionError). */
export async function openPostgresDatabase(options: PostgresDatabaseOptions): Promise<SqlDatabase> {
  if (options.password && options.entra) {
    throw new Error('PostgreSQL: give either a password or Microsoft Entra authentication, not both');
  }
  if (process.env.NODE_PG_FORCE_NATIVE) {
    throw new Error(
      'NODE_PG_FORCE_NATIVE is set, but the fleet history store uses the pure JavaScript PostgreSQL client (pg-native is not installed): unset NODE_PG_FORCE_NATIVE',
    );
  }
  const parsed = parseUrl(options.url);
  const target = connectionTarget(parsed);
  const urlPassword = parsed.password ? decodeURIComponent(parsed.password) : undefined;
  const description = describePostgresUrl(options.url);
  const { entra } = options;
  const entraPassword = entra
    ? async (): Promise<string> => {
        try {
          return (await entra.getToken()).token;
        } catch (error) {
          throw new EntraTokenError(error);
        }
      }
    : undefined;
  const password: PoolConfig['password'] = entraPassword ?? options.password ?? urlPassword;

  const pg = (await import('pg')).default;
  const builtinTypes = pg.types;
  const types = {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
      (oid === INT8_OID || oid === NUMERIC_OID) && format !== 'binary'
        ? (value: string) => Number(value)
        : builtinTypes.getTypeParser(oid, format)) as typeof builtinTypes.getTypeParser,
  };
  // pg's own URL parser (sslmode and other parameters included), on the URL without its password: given as
  // `connectionString`, the URL's (empty) password would override the `password` option.
  const { password: _none, ...fromUrl } = parseIntoClientConfig(description);
  const pool: Pool = new pg.Pool({
    ...fromUrl,
    ...(password === undefined ? {} : { password }),
    max: options.poolSize ?? 4,
    types,
    ...(options.applicationName === undefined ? {} : { application_name: options.applicationName }),
  });
  // An idle connection that breaks (server restart, network) is dropped by the pool and replaced on the next
  // query; without a listener, the 'error' event would end the process.
  pool.on('error', () => {});

  const connect = async (): Promise<PoolClient> => {
    try {
      // The token first (cached: no request while it is fresh): when the password function fails inside pg's
      // connect, pg leaves the half-open socket to the server's authentication_timeout.
      if (entraPassword) await entraPassword();
      return await pool.connect();
    } catch (error) {
      throw connectionError(error, target);
    }
  };
  const onClient = async <T>(use: (client: PoolClient) => Promise<T>): Promise<T> => {
    const client = await connect();
    try {
      return await use(client);
    } finally {
      client.release();
    }
  };

  const poolExecutor: SqlExecutor = {
    dialect: 'postgres',
    all: (sql, params) => onClient((client) => all(client, sql, params)),
    run: (sql, params) => onClient((client) => run(client, sql, params)),
    async lockKey() {
      throw new Error('lockKey() is only meaningful inside transaction()');
    },
    async lockKeys() {
      throw new Error('lockKeys() is only meaningful inside transaction()');
    },
  };

  try {
    await onClient(async () => {});
  } catch (error) {
    await pool.end().catch(() => {});
    throw error;
  }

  return {
    ...poolExecutor,
    description,
    async transaction(fn) {
      for (let attempt = 1; ; attempt++) {
        const client = await connect();
        let broken: Error | undefined;
        try {
          await query(client, 'BEGIN');
          const result = await fn(transactionExecutor(client));
          await query(client, 'COMMIT');
          return result;
        } catch (error) {
          broken = await rollback(client);
          if (attempt >= MAX_TRANSACTION_ATTEMPTS || !isRetryable(error)) throw error;
        } finally {
          client.release(broken);
        }
        await sleep(systemClock, fullJitterBackoffMs(attempt, RETRY_BACKOFF, Math.random));
      }
    },
    async withMigrationLock(fn) {
      const client = await connect();
      let broken: Error | undefined;
      try {
        await query(client, `SELECT pg_advisory_lock(${MIGRATION_LOCK_KEY})`);
        try {
          await query(client, 'BEGIN');
          const result = await fn(transactionExecutor(client));
          await query(client, 'COMMIT');
          return result;
        } catch (error) {
          broken = await rollback(client);
          throw error;
        } finally {
          if (!broken) {
            await query(client, `SELECT pg_advisory_unlock(${MIGRATION_LOCK_KEY})`).catch((error: Error) => {
              broken = error;
            });
          }
        }
      } finally {
        // A connection whose unlock failed is closed, which releases its session lock.
        client.release(broken);
      }
    },
    async close() {
      await pool.end();
    },
  };
}

function transactionExecutor(client: PoolClient): SqlExecutor {
  return {
    dialect: 'postgres',
    all: (sql, params) => all(client, sql, params),
    run: (sql, params) => run(client, sql, params),
    async lockKey(key) {
      await query(client, 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [key]);
    },
    async lockKeys(keys) {
      if (keys.length === 0) return;
      // The locks are taken in the array's order (the subquery's ORDER BY feeds the calls one row at a time).
      await new Promise<void>((resolve, reject) => {
        client.query(
          `SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0))) FROM
             (SELECT k FROM unnest($1::text[]) WITH ORDINALITY AS t(k, i) ORDER BY i) ordered`,
          [[...keys]],
          (error) => (error ? reject(error) : resolve()),
        );
      });
    },
  };
}

/**
 * Runs `sql` through the callback form of pg's client.query, never its promise form (no callback): measured with
 * pg 8.23 on Node 24, with the promise form nearly every row of every result outlived the young generation and
 * was promoted, so paging through a large history (a full CSV export of 153,000 observations) grew the old
 * generation, and RSS, by 150–230 MiB until the next full GC; with the callback form the rows die young and the
 * old generation stays flat (bench/fleet.ts, export RSS growth).
 */
function query(client: PoolClient, sql: string, params?: readonly SqlValue[]): Promise<QueryResult<SqlRow>> {
  return new Promise((resolve, reject) => {
    client.query<SqlRow>(numberPlaceholders(sql), params ? [...params] : [], (error, result) =>
      error ? reject(error) : resolve(result),
    );
  });
}

async function all(client: PoolClient, sql: string, params?: readonly SqlValue[]): Promise<SqlRow[]> {
  return (await query(client, sql, params)).rows;
}

async function run(
  client: PoolClient,
  sql: string,
  params?: readonly SqlValue[],
): Promise<{ changes: number }> {
  return { changes: (await query(client, sql, params)).rowCount ?? 0 };
}

/** ROLLBACK; returns the error when the connection is unusable (the pool then closes it instead of reusing it). */
async function rollback(client: PoolClient): Promise<Error | undefined> {
  try {
    await query(client, 'ROLLBACK');
    return undefined;
  } catch (error) {
    return toError(error);
  }
}

/** A serialization failure or deadlock, also when wrapped (`cause`) by the transaction's function. */
function isRetryable(error: unknown): boolean {
  for (let e = error, depth = 0; e && typeof e === 'object' && depth < 10; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && RETRYABLE_SQLSTATES.has(code)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

function parseUrl(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Not echoed: the text may hold a password.
    throw new Error(
      'the PostgreSQL URL is not a valid URL: expected postgres://user@host:port/database (password through the configured secret)',
    );
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new Error(
      `the PostgreSQL URL must start with postgres:// or postgresql:// (got ${parsed.protocol}//)`,
    );
  }
  return parsed;
}

interface ConnectionTarget {
  where: string;
  user: string;
}

function connectionTarget(url: URL): ConnectionTarget {
  const host = url.hostname || url.searchParams.get('host') || 'localhost';
  const port = url.port || '5432';
  const database = decodeURIComponent(url.pathname.replace(/^\//, '')) || decodeURIComponent(url.username);
  return { where: `${host}:${port}/${database}`, user: decodeURIComponent(url.username) || '(default user)' };
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);

/**
 * A connection failure as a message of our own: what failed, where (host:port/database, user) and what to do.
 * The driver's text is not copied (servers and proxies may echo what they were sent).
 */
function connectionError(error: unknown, { where, user }: ConnectionTarget): Error {
  const at = `PostgreSQL at ${where} as user "${user}"`;
  if (error instanceof EntraTokenError) {
    const reason = error.reason instanceof Error ? error.reason.name : 'error';
    return new PostgresConnectionError(
      `could not connect to ${at}: getting a Microsoft Entra access token failed (${reason}); check the credential (managed identity or workload identity) and that it may get tokens for ${ENTRA_POSTGRES_SCOPE}`,
      undefined,
    );
  }
  const code =
    typeof (error as { code?: unknown })?.code === 'string' ? (error as { code: string }).code : undefined;
  const message = errorMessage(error);
  if (code === '28P01' || code === '28000' || /password|SASL|SCRAM/i.test(message)) {
    return new PostgresConnectionError(
      `authentication failed at ${at}${code ? ` (SQLSTATE ${code})` : ''}: check the user name and its password or Microsoft Entra token, and that pg_hba.conf allows this user from this host`,
      code,
    );
  }
  if (code === '3D000') {
    return new PostgresConnectionError(
      `could not connect to ${at}: the database does not exist (SQLSTATE 3D000); create it or fix the database name in the URL`,
      code,
    );
  }
  if (code && NETWORK_CODES.has(code)) {
    return new PostgresConnectionError(
      `could not connect to ${at}: the server is unreachable (${code}); check the host and port in the URL, that the server is running, and that firewalls allow the connection`,
      code,
    );
  }
  if (/timeout/i.test(message)) {
    return new PostgresConnectionError(
      `could not connect to ${at}: the connection timed out; check the host and port and the network path to the server`,
      code,
    );
  }
  return new PostgresConnectionError(
    `could not connect to ${at}${code ? ` (${code})` : ''}: check the URL, the server and its logs`,
    code,
  );
}
