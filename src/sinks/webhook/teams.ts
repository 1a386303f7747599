/**
 * Microsoft Teams Workflows ("When a Teams webhook request is received") messages: an Adaptive Card 1.4
 * in the `{"type":"message","attachments":[…]}` envelope, kept under 20 KB. Also recognises the retired
 * Office 365 connector URLs. Pure functions; the sink itself lives in index.ts.
 */
import type { LifecycleRecord } from '../../domain/index.ts';
import {
  formatExpectedDuration,
  joinLimited,
  kubernetesNodeText,
  notBeforeText,
  portalUrl,
  severityOf,
  titleOf,
  truncateText,
  UNICODE_EMOJI,
  vmDescription,
} from '../format.ts';
import { escapeCardMarkdown } from './escape.ts';

/** Keep messages below this many bytes (Teams rejects ~28 KB; practical limit lower). */
export const TEAMS_MAX_BYTES = 20_000;

export interface TeamsMessage {
  type: 'message';
  attachments: Array<{
    contentType: 'application/vnd.microsoft.card.adaptive';
    contentUrl: null;
    content: Record<string, unknown>;
  }>;
}

/**
 * Wraps an Adaptive Card in the envelope the Workflows template iterates over (a template's values are escaped
 * when it renders, renderJsonTemplate with the `teams` target).
 */
export function wrapCard(card: Record<string, unknown>): TeamsMessage {
  return {
    type: 'message',
    attachments: [
      { contentType: 'application/vnd.microsoft.card.adaptive', contentUrl: null, content: card },
    ],
  };
}

/** Byte size of the serialised message. */
export function messageBytes(message: TeamsMessage): number {
  return Buffer.byteLength(JSON.stringify(message), 'utf8');
}

/**
 * The default Adaptive Card for a record, with description and resource list capped at the given lengths.
 * Every text that holds IMDS data (title, description, fact values) is escaped with escapeCardMarkdown, so
 * Teams renders it literally: no links, emphasis, headings, lists or line breaks can come from it.
 */
export function buildAdaptiveCard(
  record: LifecycleRecord,
  limits: { description: number; resources: number } = { description: 4000, resources: 4000 },
): Record<string, unknown> {
  const d = record.data;
  const emoji = UNICODE_EMOJI[severityOf(record)];
  const node = kubernetesNodeText(record);
  const md = escapeCardMarkdown;
  const body: Array<Record<string, unknown>> = [
    {
      type: 'TextBlock',
      size: 'Large',
      weight: 'Bolder',
      wrap: true,
      text: `${emoji} ${md(titleOf(record))}`,
    },
    {
      type: 'TextBlock',
      wrap: true,
      isSubtle: true,
      text:
        d.Description === ''
          ? 'No description provided by Azure.'
          : md(truncateText(d.Description, limits.description)),
    },
    {
      type: 'FactSet',
      facts: [
        { title: 'VM', value: md(vmDescription(record)) },
        ...(node === null ? [] : [{ title: 'Kubernetes node', value: md(node) }]),
        { title: 'Event type', value: md(d.EventType) },
        { title: 'Status', value: md(d.EventStatus || record.transition) },
        { title: 'Not before', value: md(notBeforeText(record)) },
        { title: 'Expected duration', value: formatExpectedDuration(d.DurationInSeconds) },
        {
          title: `Resources (${d.Resources.length})`,
          value: d.Resources.length === 0 ? 'none listed' : md(joinLimited(d.Resources, limits.resources)),
        },
        { title: 'Source', value: md(d.EventSource || 'not reported') },
        { title: 'Event ID', value: md(d.EventId) },
      ],
    },
  ];
  const card: Record<string, unknown> = {
    $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
    type: 'AdaptiveCard',
    version: '1.4',
    msteams: { width: 'Full' },
    body,
  };
  const url = portalUrl(record);
  if (url) card.actions = [{ type: 'Action.OpenUrl', title: 'Open VM in portal', url }];
  return card;
}

/**
 * The default Teams message for a record, shrinking the description and resource list until the message
 * fits TEAMS_MAX_BYTES.
 */
export function buildTeamsMessage(record: LifecycleRecord): TeamsMessage {
  let limits = { description: 4000, resources: 4000 };
  for (;;) {
    const message = wrapCard(buildAdaptiveCard(record, limits));
    if (messageBytes(message) <= TEAMS_MAX_BYTES || (limits.description <= 100 && limits.resources <= 100)) {
      return message;
    }
    limits = {
      description: Math.max(100, limits.description >> 1),
      resources: Math.max(100, limits.resources >> 1),
    };
  }
}

/**
 * True for retired Office 365 connector ("Incoming Webhook") URLs: *.webhook.office.com and
 * outlook.office.com / outlook.office365.com /webhook paths.
 */
export function isRetiredConnectorUrl(url: URL): boolean {
  const host = url.hostname.toLowerCase();
  if (host === 'webhook.office.com' || host.endsWith('.webhook.office.com')) return true;
  if (
    (host === 'outlook.office.com' || host === 'outlook.office365.com') &&
    url.pathname.startsWith('/webhook')
  ) {
    return true;
  }
  return false;
}
