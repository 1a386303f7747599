/** Typed access to the page's elements (index.html). */

/** The element with this id; the page always has it (a missing one is a bug of index.html). */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (el === null) throw new Error(`the dashboard page has no element #${id}`);
  return el as T;
}

/** The body of the table with this id. */
export function tableBody(tableId: string): HTMLTableSectionElement {
  const body = document.querySelector<HTMLTableSectionElement>(`#${tableId} tbody`);
  if (body === null) throw new Error(`the dashboard page has no table #${tableId}`);
  return body;
}

/** The filter form. */
export const form = byId<HTMLFormElement>('filters');

/** A field of the filter form by name. */
export function field<T extends HTMLInputElement | HTMLSelectElement = HTMLInputElement>(name: string): T {
  const el = form.elements.namedItem(name);
  if (el === null) throw new Error(`the filter form has no field ${name}`);
  return el as T;
}

/** The since and until of the filter form (ISO text as typed, empty for none). */
export function filterWindow(): { since: string; until: string } {
  return { since: field('since').value, until: field('until').value };
}

/** Updates a pager's label and buttons: page n (1-based), and whether there is a next one. */
export function setPager(prefix: string, n: number, next: string | null): void {
  const label = byId(`${prefix}-page`);
  label.textContent = `page ${n}`;
  label.setAttribute('data-page', String(n));
  byId<HTMLButtonElement>(`${prefix}-next`).disabled = !next;
  byId<HTMLButtonElement>(`${prefix}-prev`).disabled = n <= 1;
  byId<HTMLButtonElement>(`${prefix}-first`).disabled = n <= 1;
}
