/**
 * Slack incoming-webhook messages: fallback `text` plus Block Kit blocks, always within Block Kit limits
 * (50 blocks, 150-char header, 3,000 chars per text, 10 fields of 2,000 chars, 10 context elements).
 * Pure functions; the sink itself lives in index.ts.
 */
import type { LifecycleRecord } from '../../domain/index.ts';
import {
  formatExpectedDuration,
  joinLimited,
  kubernetesNodeText,
  notBeforeText,
  SLACK_EMOJI,
  severityOf,
  summaryLine,
  titleOf,
  truncateText,
  vmDescription,
} from '../format.ts';
import { escapeMrkdwn } from './escape.ts';

export const SLACK_LIMITS = {
  blocks: 50,
  headerText: 150,
  text: 3000,
  fields: 10,
  fieldText: 2000,
  contextElements: 10,
} as const;

export interface SlackTextObject {
  type: 'plain_text' | 'mrkdwn';
  text: string;
  emoji?: boolean;
}

export interface SlackBlock {
  type: string;
  text?: SlackTextObject;
  fields?: SlackTextObject[];
  elements?: Array<SlackTextObject | Record<string, unknown>>;
  [key: string]: unknown;
}

export interface SlackMessage {
  text: string;
  blocks?: SlackBlock[];
  [key: string]: unknown;
}

export { escapeMrkdwn } from './escape.ts';

function field(label: string, value: string): SlackTextObject {
  const prefix = `*${label}*\n`;
  return { type: 'mrkdwn', text: prefix + truncateText(value, SLACK_LIMITS.fieldText - prefix.length) };
}

/**
 * The default Slack message for a lifecycle record. Every text that holds IMDS data (EventId, EventType,
 * EventStatus, Description, Resources, EventSource, NotBefore, VM and node names) is escaped with
 * escapeMrkdwn, in the fallback `text`, the plain_text header and the mrkdwn blocks alike, so no
 * `<!channel>`, `<@U…>` or `<url|label>` can form from it.
 */
export function buildSlackMessage(record: LifecycleRecord): SlackMessage {
  const d = record.data;
  const emoji = SLACK_EMOJI[severityOf(record)];
  const resourcesLabel = `*Resources (${d.Resources.length})*\n`;
  const resources =
    d.Resources.length === 0
      ? 'none listed'
      : joinLimited(d.Resources.map(escapeMrkdwn), SLACK_LIMITS.fieldText - resourcesLabel.length);
  const description =
    d.Description === '' ? '_No description provided by Azure._' : escapeMrkdwn(d.Description);
  const node = kubernetesNodeText(record);
  const blocks: SlackBlock[] = [
    {
      type: 'header',
      text: { type: 'plain_text', text: `${emoji} ${escapeMrkdwn(titleOf(record))}`, emoji: true },
    },
    { type: 'section', text: { type: 'mrkdwn', text: description } },
    {
      type: 'section',
      fields: [
        field('VM', escapeMrkdwn(vmDescription(record))),
        ...(node === null ? [] : [field('Kubernetes node', escapeMrkdwn(node))]),
        field('Event type', escapeMrkdwn(d.EventType)),
        field('Status', escapeMrkdwn(d.EventStatus || record.transition)),
        field('Not before', escapeMrkdwn(notBeforeText(record))),
        field('Expected duration', formatExpectedDuration(d.DurationInSeconds)),
        field('Source', escapeMrkdwn(d.EventSource || 'not reported')),
        { type: 'mrkdwn', text: resourcesLabel + resources },
      ],
    },
    {
      type: 'context',
      elements: [
        {
          type: 'mrkdwn',
          text: `EventId \`${escapeMrkdwn(d.EventId)}\` · ${record.transition} · observed ${record.time}`,
        },
      ],
    },
  ];
  return enforceBlockKitLimits({ text: escapeMrkdwn(summaryLine(record)), blocks });
}

function limitTextObject(obj: SlackTextObject, max: number): SlackTextObject {
  return typeof obj.text === 'string' && obj.text.length > max
    ? { ...obj, text: truncateText(obj.text, max) }
    : obj;
}

function isTextObject(value: unknown): value is SlackTextObject {
  return (
    typeof value === 'object' && value !== null && typeof (value as { text?: unknown }).text === 'string'
  );
}

/**
 * Returns a copy of `message` cut down to Block Kit limits (used for default and templated messages alike;
 * a template's values are escaped when it renders, renderJsonTemplate with the `slack` target). Truncation
 * never splits a surrogate pair. A missing fallback `text` is filled with `fallbackText`, plain text (e.g.
 * summaryLine), which is escaped here.
 */
export function enforceBlockKitLimits(message: SlackMessage, fallbackText = ''): SlackMessage {
  const text =
    typeof message.text === 'string' && message.text !== '' ? message.text : escapeMrkdwn(fallbackText);
  const out: SlackMessage = { ...message, text: truncateText(text, SLACK_LIMITS.text) };
  if (!Array.isArray(message.blocks)) return out;
  out.blocks = message.blocks.slice(0, SLACK_LIMITS.blocks).map((block) => {
    const b: SlackBlock = { ...block };
    if (isTextObject(b.text)) {
      b.text = limitTextObject(b.text, b.type === 'header' ? SLACK_LIMITS.headerText : SLACK_LIMITS.text);
    }
    if (Array.isArray(b.fields)) {
      b.fields = b.fields
        .slice(0, SLACK_LIMITS.fields)
        .map((f) => (isTextObject(f) ? limitTextObject(f, SLACK_LIMITS.fieldText) : f));
    }
    if (Array.isArray(b.elements) && b.type === 'context') {
      b.elements = b.elements
        .slice(0, SLACK_LIMITS.contextElements)
        .map((e) => (isTextObject(e) ? limitTextObject(e, SLACK_LIMITS.text) : e));
    }
    return b;
  });
  return out;
}
