/**
 * The store redacts errors before SQLite sees them (issue 14 item 4): whatever a caller passes as a failed
 * attempt's error or a dead-letter reason, neither forwarder.db nor its WAL (read while the store is open, so
 * nothing was checkpointed away) holds a configured secret or a credential-shaped string.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log.ts';
import { Secret } from '../../../src/secret.ts';
import { openStore } from '../../../src/store/index.ts';
import { makeRecord } from '../../support/delivery.ts';
import { makeTempDir } from '../../support/tmp.ts';

const tmp = makeTempDir('sef-store-redact-');
afterEach(() => tmp.cleanup());

describe('stored errors', () => {
  it('never reach the database or the WAL with a secret in them', () => {
    const configured = new Secret('Bearer st0re-Token-5e6f7a8b', 'env TEST').reveal().slice('Bearer '.length);
    const store = openStore({ stateDir: tmp.dir, logger: silentLogger() });
    try {
      store.commit({ n: 1 }, [
        { record: makeRecord(1), sinks: ['a'] },
        { record: makeRecord(2), sinks: ['a'] },
      ]);
      const [first, second] = store.pending('a', 10);
      store.recordFailure('a', [first!.seq], {
        attempts: 1,
        nextAttemptAt: Date.now(),
        error: `http-401: invalid token ${configured} (https://x.example/?sig=SiG0123456789abcdef)`,
      });
      store.deadLetter('a', [second!.seq], {
        reason: 'permanent',
        error: `http-403: denied for http://user:Pa55w0rdInUrl@collector.example`,
      });
      const db = readFileSync(join(tmp.dir, 'forwarder.db'));
      const wal = readFileSync(join(tmp.dir, 'forwarder.db-wal'));
      for (const secret of [configured, 'SiG0123456789abcdef', 'Pa55w0rdInUrl']) {
        expect(db.includes(Buffer.from(secret)), secret).toBe(false);
        expect(wal.includes(Buffer.from(secret)), secret).toBe(false);
      }
      expect(wal.includes(Buffer.from('invalid token [redacted]'))).toBe(true);
      expect(store.stats().find((s) => s.sink === 'a')?.lastError).toContain('invalid token [redacted]');
      expect(store.listDeadLetters()[0]!.error).toBe(
        'http-403: denied for http://[redacted]@collector.example',
      );
    } finally {
      store.close();
    }
  });
});
