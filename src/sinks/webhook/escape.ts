/**
 * Escaping of untrusted text (everything that comes from IMDS: EventId, EventType, EventStatus, Description,
 * Resources, EventSource, NotBefore, VM names; and data.kubernetes) for the two chat formats, and the deferred
 * per-target escaping of template values. Pure functions; docs/sinks-webhook.md ("Escaping").
 *
 * Templates are rendered before the target's rules can be applied to the right JSON property (a URL property
 * must not be escaped like a text), so renderJsonTemplate (template.ts) wraps every `{{name}}` value in two
 * private-use marker characters; the Slack and Teams builders (`enforceBlockKitLimits`, `wrapCard`) then
 * replace each marked value by its escaped form with resolveTemplateValues. `{{{name}}}` is never marked: raw.
 */

/** Slack's escaping (mrkdwn, plain_text and the fallback `text`): `&`, `<`, `>` as HTML entities. */
export function escapeMrkdwn(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Line breaks of every kind (a line start is where headings, lists and quotes form). */
const LINE_BREAKS = /\r\n|[\n\r\v\f\u0085\u2028\u2029]/g;
/**
 * Characters that form Markdown anywhere in a line: escapes, code, emphasis, strikethrough, links and images,
 * autolinks and HTML, entities, tables, Adaptive Cards' `{{DATE(…)}}`/`{{TIME(…)}}` functions.
 */
const INLINE_MARKDOWN = /[\\`*_~[\]{}<>&|!]/g;
/**
 * Block markers that only count at the start of a line: heading, bullet, setext underline, ordered list
 * (`>` quotes and `*` bullets are escaped everywhere already).
 */
const LINE_START_MARKER = /^([#+\-=]|\d+(?=[.)]))/;

/**
 * Escapes text for Adaptive Card (Teams) Markdown so it renders literally in TextBlocks and facts: line breaks
 * become spaces (the text stays one line, so no heading, list or quote can start inside it), leading
 * whitespace is dropped (an indented code block), inline metacharacters get a backslash and a line-start
 * marker at the beginning is escaped too. Characters that only form Markdown at a line start (`- + # .`)
 * or after `]` (`( )`) are left alone elsewhere, so GUIDs, names and times read as they are.
 */
export function escapeCardMarkdown(text: string): string {
  const oneLine = text.replace(LINE_BREAKS, ' ').trimStart();
  const escaped = oneLine.replace(INLINE_MARKDOWN, '\\$&');
  const marker = LINE_START_MARKER.exec(escaped);
  if (marker === null) return escaped;
  // "1." / "1)" → "1\." / "1\)"; "#", "-", "+", "=" → "\#", "\-", ….
  if (/^\d/.test(marker[0])) return `${marker[0]}\\${escaped.slice(marker[0].length)}`;
  return `\\${escaped}`;
}

const OPEN = '\uE000';
const CLOSE = '\uE001';
const MARKERS = /[\uE000\uE001]/g;
const MARKED = /\uE000([^\uE000\uE001]*)\uE001/g;

/** Wraps a template value in the markers (any marker characters inside the value are removed). */
export function markTemplateValue(value: string): string {
  return OPEN + value.replace(MARKERS, '') + CLOSE;
}

/** Removes every marker character (for error messages that quote rendered text). */
export function stripTemplateMarkers(text: string): string {
  return text.replace(MARKERS, '');
}

/**
 * URL properties (`url`, `iconUrl`, `image_url`, …): not rendered as text by Slack or Teams, and escaping
 * would break the link, so marked values are inserted unescaped there (docs/sinks-webhook.md).
 */
function isUrlProperty(key: string | undefined): boolean {
  return key !== undefined && /(^|_)url$|Url$/i.test(key);
}

function resolveString(
  text: string,
  key: string | undefined,
  escapeValue: (value: string) => string,
): string {
  if (!text.includes(OPEN) && !text.includes(CLOSE)) return text;
  const url = isUrlProperty(key);
  return text
    .replace(MARKED, (_all, value: string) => (url ? value : escapeValue(value)))
    .replace(MARKERS, '');
}

/**
 * A deep copy of a rendered template with every marked value replaced by `escapeValue(value)` (URL properties:
 * the value as it is) and stray markers removed, in values and keys alike.
 */
export function resolveTemplateValues<T>(node: T, escapeValue: (value: string) => string, key?: string): T {
  if (typeof node === 'string') return resolveString(node, key, escapeValue) as T;
  if (Array.isArray(node)) return node.map((item) => resolveTemplateValues(item, escapeValue, key)) as T;
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node as Record<string, unknown>)) {
    const name = resolveString(k, undefined, escapeValue);
    out[name] = resolveTemplateValues(v, escapeValue, name);
  }
  return out as T;
}
