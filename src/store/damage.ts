/** Damage found when the store was opened (a lost WAL, a quarantined database), as recorded in its meta table. */
import { QUARANTINE_META, WAL_DAMAGE_META } from './database.ts';
import type { Store } from './types.ts';

/** Damage found when the store was opened (persisted in meta, so it is still reported after restarts). */
export interface StoreDamage {
  /** wal: committed WAL frames could not be replayed (rows lost); corrupt: the database was quarantined. */
  kind: 'wal' | 'corrupt';
  /** When it was detected (ISO 8601). */
  at: string;
  /** The damaged file, and where a copy (wal) or the file itself (corrupt) was kept. */
  file: string;
  keptAt?: string;
  detail: string;
}

/** The damage recorded in the store's meta table, for /readyz and metrics. */
export function storeDamage(store: Store): StoreDamage[] {
  const found: StoreDamage[] = [];
  const read = (key: string): Record<string, unknown> | undefined => {
    try {
      const raw = store.getMeta(key);
      return raw === undefined ? undefined : (JSON.parse(raw) as Record<string, unknown>);
    } catch {
      return undefined;
    }
  };
  const wal = read(WAL_DAMAGE_META);
  if (wal !== undefined) {
    found.push({
      kind: 'wal',
      at: String(wal.at),
      file: String(wal.wal),
      ...(typeof wal.copy === 'string' ? { keptAt: wal.copy } : {}),
      detail: `${String(wal.detail)}; at least ${String(wal.lostTransactions)} committed transaction(s) lost`,
    });
  }
  const corrupt = read(QUARANTINE_META);
  if (corrupt !== undefined) {
    found.push({
      kind: 'corrupt',
      at: String(corrupt.at),
      file: store.databasePath,
      keptAt: String(corrupt.file),
      detail: 'the database failed its integrity check and was quarantined; a fresh one was started',
    });
  }
  return found;
}
