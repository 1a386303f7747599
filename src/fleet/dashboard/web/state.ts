/** What the page keeps between requests: the server's clock, the filter's generation and each list's paging. */

/** A list paged with the server's cursors: cursors[n - 1] is page n's, next is the page after the shown one. */
export interface Paging {
  cursors: string[];
  next: string | null;
}

export const page = {
  /** The default window's since (30 days before the server's clock), set at start-up. */
  defaultSince: '',
  /** The server's clock (ms) as last reported by /api/status. */
  serverNow: Date.now(),
  /** Bumped by every refresh: an answer for an older generation is dropped. */
  generation: 0,
};

/** The events table; `query` is the filter of every list (without affectsOnly). */
export const events: Paging & { query: string } = { query: '', cursors: [''], next: null };
/** The pending table ("more" appends a page). */
export const pending: { next: string | null; shown: number } = { next: null, shown: 0 };
export const blast: Paging = { cursors: [''], next: null };
/** The event page's records, of the event `id`, `occurrence`. */
export const records: Paging & { id: string; occurrence: string } = {
  id: '',
  occurrence: '',
  cursors: [''],
  next: null,
};
