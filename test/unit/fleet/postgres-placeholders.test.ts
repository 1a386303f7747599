import { describe, expect, it } from 'vitest';
import { describePostgresUrl, numberPlaceholders } from '../../../src/fleet/history/postgres-database.ts';

describe('numberPlaceholders', () => {
  it('numbers ? placeholders $1..$n in order', () => {
    expect(numberPlaceholders('SELECT * FROM t WHERE a = ? AND b IN (?, ?)')).toBe(
      'SELECT * FROM t WHERE a = $1 AND b IN ($2, $3)',
    );
    expect(numberPlaceholders('INSERT INTO t(a,b) VALUES(?,?) ON CONFLICT DO NOTHING')).toBe(
      'INSERT INTO t(a,b) VALUES($1,$2) ON CONFLICT DO NOTHING',
    );
  });

  it('leaves SQL without placeholders unchanged', () => {
    expect(numberPlaceholders('SELECT count(*) FROM t')).toBe('SELECT count(*) FROM t');
  });

  it('leaves question marks inside string literals and quoted identifiers alone', () => {
    expect(numberPlaceholders(`SELECT '?', 'it''s ?', "a?b" FROM t WHERE x = ?`)).toBe(
      `SELECT '?', 'it''s ?', "a?b" FROM t WHERE x = $1`,
    );
  });
});

describe('describePostgresUrl', () => {
  it('removes the password and keeps user, host, port, database and parameters', () => {
    const described = describePostgresUrl(
      'postgres://fleet:s3cr%40t@db.example.com:6432/history?sslmode=require',
    );
    expect(described).toBe('postgres://fleet@db.example.com:6432/history?sslmode=require');
    expect(described).not.toContain('s3cr');
  });

  it('removes a password given as a query parameter', () => {
    expect(describePostgresUrl('postgresql://u@h/db?password=hunter2')).not.toContain('hunter2');
  });

  it('rejects an invalid URL without echoing it', () => {
    expect(() => describePostgresUrl('not a url with hunter2')).toThrow(/not a valid URL/);
    expect(() => describePostgresUrl('not a url with hunter2')).not.toThrow(/hunter2/);
  });
});
