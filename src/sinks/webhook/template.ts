/**
 * Operator templates for Slack messages and Teams cards, rendered with Mustache (logic-less: no code
 * execution, no partials, no file or network access). A template is a JSON document rendered for a named
 * target (Slack mrkdwn, Teams Adaptive Card text, plain JSON: escape.ts); `{{name}}` inserts a value escaped
 * for use inside a JSON string and for the target where it lands as text (a URL property gets plain JSON, so
 * the link keeps working), `{{{name}}}` inserts it raw (unsafe).
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
import { ESCAPE_TEXT, isUrlProperty, type TextTarget } from './escape.ts';
import { JsonPosition } from './json-position.ts';
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
 * A Mustache writer that knows where in the JSON text each value lands: it follows the output (every literal
 * and every inserted value, in output order) with a JsonPosition, and escapes each `{{name}}` value for its
 * place: text (keys included) for the target, URL properties as plain JSON. Numbers and booleans stay bare
 * (they may stand outside a string). `{{{name}}}` is inserted as it is.
 */
class JsonTemplateWriter extends Mustache.Writer {
  readonly #position = new JsonPosition();
  readonly #target: TextTarget;

  constructor(target: TextTarget) {
    super();
    this.#target = target;
  }

  override rawValue(token: string[]): string {
    return this.#emit(super.rawValue(token));
  }

  override unescapedValue(token: string[], context: Mustache.Context): string {
    const value: unknown = context.lookup(token[1]!);
    return value === null || value === undefined ? '' : this.#emit(String(value));
  }

  override escapedValue(token: string[], context: Mustache.Context): string {
    const value: unknown = context.lookup(token[1]!);
    if (value === null || value === undefined) return '';
    if (typeof value === 'number' || typeof value === 'boolean') return this.#emit(String(value));
    const place = this.#position.place();
    const target = place.inString && !place.isKey && isUrlProperty(place.property) ? 'json' : this.#target;
    return this.#emit(escapeJsonString(ESCAPE_TEXT[target](String(value))));
  }

  #emit(text: string): string {
    this.#position.feed(text);
    return text;
  }
}

/**
 * Renders a JSON template for a record, for a target (`slack`: Slack mrkdwn; `teams`: Adaptive Card text;
 * `json`: plain JSON), and parses the result. A result that is not a JSON object is a permanent delivery error
 * naming the template file (the record goes to the dead-letter table).
 */
export function renderJsonTemplate(
  template: WebhookTemplate,
  record: LifecycleRecord,
  where: string,
  target: TextTarget,
): Record<string, unknown> {
  const rendered = new JsonTemplateWriter(target).render(template.text, templateView(record));
  let parsed: unknown;
  try {
    parsed = JSON.parse(rendered);
  } catch (error) {
    throw invalidTemplateError(
      `${where}: template ${template.path} did not render to valid JSON: ${errorMessage(error)}`,
    );
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw invalidTemplateError(`${where}: template ${template.path} must render to a JSON object`);
  }
  return parsed as Record<string, unknown>;
}
