/**
 * CSV for the fleet exports: RFC 4180 cells and lines (CRLF), with formula injection neutralised as the OWASP
 * CSV injection guidance (and ASVS 1.2.10) says: a text starting with `=`, `+`, `-`, `@`, TAB, CR or NUL gets
 * a leading `'` and is quoted, so a spreadsheet shows it as text instead of evaluating it (a VM name or a
 * Description like `=HYPERLINK("http://x","y")` comes from the fleet's records, i.e. from other machines).
 * Numbers are not text: -5 is written as -5.
 */

/** First characters that make a spreadsheet read a cell as a formula (or strip to one). */
const FORMULA_START = /^[=+\-@\t\r\0]/;
/** Characters that force quoting (RFC 4180 2.6). */
const NEEDS_QUOTES = /[",\r\n]/;

function quoted(text: string): string {
  return `"${text.replaceAll('"', '""')}"`;
}

function textOf(value: unknown): string {
  if (Array.isArray(value))
    return value.map((v) => (v === null || v === undefined ? '' : textOf(v))).join(' ');
  if (value instanceof Date && !Number.isNaN(value.getTime())) return value.toISOString();
  return String(value);
}

/** One CSV cell: null/undefined empty, numbers as numbers, arrays joined with a space, text neutralised. */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'bigint')
    return String(value);
  const text = textOf(value);
  if (FORMULA_START.test(text)) return quoted(`'${text}`);
  return NEEDS_QUOTES.test(text) ? quoted(text) : text;
}

/** One CSV line (RFC 4180), CRLF-terminated. */
export function csvLine(values: readonly unknown[]): string {
  return `${values.map(csvCell).join(',')}\r\n`;
}
