/**
 * Escaping of untrusted text (everything that comes from IMDS: EventId, EventType, EventStatus, Description,
 * Resources, EventSource, NotBefore, VM names; and data.kubernetes) for the formats a message is written in.
 * Pure functions; docs/sinks-webhook.md ("Escaping"). The default Slack and Teams messages escape each text
 * they build; templates name their target (renderJsonTemplate, template.ts), and each `{{name}}` value is
 * escaped for the target where it lands as text, and for plain JSON in URL properties.
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

/** What a template renders: Slack mrkdwn (and plain_text), Teams Adaptive Card text, or plain JSON. */
export type TextTarget = 'slack' | 'teams' | 'json';

/** The escaping of text for each target (plain JSON: none beyond the JSON string's own). */
export const ESCAPE_TEXT: Readonly<Record<TextTarget, (text: string) => string>> = {
  slack: escapeMrkdwn,
  teams: escapeCardMarkdown,
  json: (text) => text,
};

/**
 * URL properties (`url`, `iconUrl`, `image_url`, …): not rendered as text by Slack or Teams, and text escaping
 * would break the link, so a template value lands there as plain JSON (docs/sinks-webhook.md).
 */
export function isUrlProperty(key: string | undefined): boolean {
  return key !== undefined && /(^|_)url$|Url$/i.test(key);
}
