/**
 * Operator templates for Slack messages and Teams cards, rendered with Mustache (logic-less: no code
 * execution, no partials, no file or network access). A template is a JSON document; `{{name}}` inserts a
 * value escaped for use inside a JSON string and for the target format (Slack mrkdwn or Adaptive Card
 * Markdown, applied by enforceBlockKitLimits / wrapCard: escape.ts), `{{{name}}}` inserts it raw (unsafe).
 */
import Mustache from 'mustache';
import type { LifecycleRecord } from '../../domain/index.ts';
import { errorMessage } from '../../errors.ts';
import { invalidTemplateError } from '../delivery-errors.ts';
import {
  formatExpectedDuration,
  formatUtc,
  kubernetesNodeText,
  notBeforeText,
  portalUrl,
  relativeTime,
  SLACK_EMOJI,
  severityOf,
  summaryLine,
  titleOf,
  UNICODE_EMOJI,
  vmDescription,
  vmDisplayName,
} from '../format.ts';
import { markTemplateValue, stripTemplateMarkers } from './escape.ts';
import { readTemplateFile } from './options.ts';

/** A loaded template: its file path (safe to show) and text. */
export interface WebhookTemplate {
  path: string;
  text: string;
}

/** Reads and pre-parses a template file at configuration time; errors name the file and the problem. */
export function loadTemplate(path: string, sinkName: string): WebhookTemplate {
  try {
    return { path, text: readTemplateFile(path) };
  } catch (error) {
    throw new Error(`sink ${sinkName}: ${errorMessage(error)}`);
  }
}

/** Escapes a value for inclusion inside a JSON string literal. */
export function escapeJsonString(value: unknown): string {
  return JSON.stringify(String(value)).slice(1, -1);
}

/**
 * The `{{name}}` escape: a JSON-string-escaped value wrapped in the markers of escape.ts, so the Slack or
 * Teams builder escapes it for its format. Numbers and booleans stay bare (they may stand outside a string).
 */
function escapeTemplateValue(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return escapeJsonString(markTemplateValue(String(value)));
}

/** The values a template can use. Documented in docs/sinks-webhook.md. */
export interface TemplateView {
  record: LifecycleRecord;
  event: LifecycleRecord['data'];
  vm: LifecycleRecord['data']['vm'];
  transition: string;
  title: string;
  summary: string;
  severity: string;
  slackEmoji: string;
  emoji: string;
  vmName: string;
  vmDescription: string;
  notBefore: string;
  notBeforeUtc: string;
  notBeforeRelative: string;
  expectedDuration: string;
  resources: string;
  resourceCount: number;
  portalUrl: string;
  /** `data.kubernetes` (undefined outside Kubernetes: `{{#kubernetes}}…{{/kubernetes}}` renders nothing). */
  kubernetes: LifecycleRecord['data']['kubernetes'];
  /** The node name, "" outside Kubernetes. */
  nodeName: string;
  /** `kubernetes.clusterName`, "" when not configured. */
  clusterName: string;
  /** "aks-nodepool1-0 (cluster prod-weu)", "" outside Kubernetes. */
  nodeDescription: string;
  /**
   * The node labels as a list (label keys contain dots and slashes, which Mustache names cannot address):
   * `{{#nodeLabels}}{{key}}={{value}} {{/nodeLabels}}`.
   */
  nodeLabels: Array<{ key: string; value: string }>;
}

/** Builds the template view of a record (pure). */
export function templateView(record: LifecycleRecord): TemplateView {
  const severity = severityOf(record);
  return {
    record,
    event: record.data,
    vm: record.data.vm,
    transition: record.transition,
    title: titleOf(record),
    summary: summaryLine(record),
    severity,
    slackEmoji: SLACK_EMOJI[severity],
    emoji: UNICODE_EMOJI[severity],
    vmName: vmDisplayName(record),
    vmDescription: vmDescription(record),
    notBefore: notBeforeText(record),
    notBeforeUtc: formatUtc(record.data.notBeforeUtc, record.data.NotBefore),
    notBeforeRelative: relativeTime(record.data.notBeforeUtc, record.time) ?? '',
    expectedDuration: formatExpectedDuration(record.data.DurationInSeconds),
    resources: record.data.Resources.join(', '),
    resourceCount: record.data.Resources.length,
    portalUrl: portalUrl(record) ?? '',
    kubernetes: record.data.kubernetes,
    nodeName: record.data.kubernetes?.nodeName ?? '',
    clusterName: record.data.kubernetes?.clusterName ?? '',
    nodeDescription: kubernetesNodeText(record) ?? '',
    nodeLabels: Object.entries(record.data.kubernetes?.labels ?? {}).map(([key, value]) => ({ key, value })),
  };
}

/**
 * Renders a JSON template for a record and parses the result. A result that is not a JSON object is a
 * permanent delivery error naming the template file (the record goes to the dead-letter table).
 * `{{name}}` values come back marked (escape.ts): pass the result to enforceBlockKitLimits (Slack) or
 * wrapCard (Teams), which escape them for their format and remove the markers.
 */
export function renderJsonTemplate(
  template: WebhookTemplate,
  record: LifecycleRecord,
  where: string,
): Record<string, unknown> {
  const rendered = Mustache.render(template.text, templateView(record), {}, { escape: escapeTemplateValue });
  let parsed: unknown;
  try {
    parsed = JSON.parse(rendered);
  } catch (error) {
    throw invalidTemplateError(
      `${where}: template ${template.path} did not render to valid JSON: ${stripTemplateMarkers(errorMessage(error))}`,
    );
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw invalidTemplateError(`${where}: template ${template.path} must render to a JSON object`);
  }
  return parsed as Record<string, unknown>;
}
