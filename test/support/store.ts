/** Test-only access to the SQLite store's internals (kept off the production Store interfaces). */
import type { Store } from '../../src/store/index.ts';
import { SqliteStore } from '../../src/store/store.ts';

/** Limit the database to `pages` pages so the next growth fails with SQLITE_FULL; undefined lifts the limit. */
export function setPageLimit(store: Store, pages: number | undefined): void {
  if (!(store instanceof SqliteStore)) throw new Error('setPageLimit needs the SQLite store');
  store.setPageLimit(pages);
}
