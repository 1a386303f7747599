/**
 * Record enrichment (docs/kubernetes.md#record-enrichment): what the transform puts in every record as
 * `data.kubernetes` — the node name, `kubernetes.clusterName` and the values of the configured node labels. The
 * labels are read from the Node (GET nodes/<name>, the permission the node hook already needs) at start and then
 * every LABELS_REFRESH_MS (LABELS_RETRY_MS after a failed read); the transform gets the cached values as an input,
 * never doing I/O itself. Without configured labels nothing is read (and the client is not loaded for this).
 */
import type { KubernetesRecordContext } from '../domain/index.ts';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { NodeApi } from './client.ts';
import type { KubernetesConfig } from './config.ts';

/** How often the node's labels are read again (labels of a node rarely change: agent pool, zone, ...). */
export const LABELS_REFRESH_MS = 10 * 60_000;
/** After a failed read: the next attempt. */
export const LABELS_RETRY_MS = 30_000;
/** At start the first outcome waits at most this long for the first read (a hanging API server). */
export const FIRST_LABELS_WAIT_MS = 10_000;

/** The configured label keys with the node's values (keys the node does not carry are left out). Pure. */
export function selectLabels(
  keys: readonly string[],
  nodeLabels: Readonly<Record<string, string>>,
): Record<string, string> {
  const selected: Record<string, string> = {};
  for (const key of keys) {
    if (Object.hasOwn(nodeLabels, key)) selected[key] = nodeLabels[key]!;
  }
  return selected;
}

export interface NodeEnrichmentOptions {
  api: () => Promise<NodeApi>;
  nodeName: string;
  config: Pick<KubernetesConfig, 'clusterName' | 'labels'>;
  logger: Logger;
  refreshMs?: number;
  retryMs?: number;
}

/** The node context for records, with the label values cached; see the module comment. */
export class NodeEnrichment {
  readonly #o: NodeEnrichmentOptions;
  #labels: Record<string, string> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #lastError: string | undefined;

  constructor(options: NodeEnrichmentOptions) {
    this.#o = options;
  }

  /** `data.kubernetes` of the records made now. */
  current(): KubernetesRecordContext {
    const { clusterName } = this.#o.config;
    return {
      nodeName: this.#o.nodeName,
      ...(clusterName === undefined ? {} : { clusterName }),
      ...(this.#labels === undefined ? {} : { labels: this.#labels }),
    };
  }

  /**
   * Reads the labels (when some are configured) and schedules the refreshes. Resolves after the first read,
   * successful or not, or after FIRST_LABELS_WAIT_MS; never rejects.
   */
  start(): Promise<void> {
    if (this.#o.config.labels.length === 0) return Promise.resolve();
    const first = this.#read();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, FIRST_LABELS_WAIT_MS);
      timer.unref();
      void first.then(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  async #read(): Promise<void> {
    let ok = false;
    try {
      const node = await (await this.#o.api()).readNode(this.#o.nodeName);
      this.#labels = selectLabels(this.#o.config.labels, node.labels);
      ok = true;
      if (this.#lastError !== undefined) this.#o.logger.info('node labels read again');
      this.#lastError = undefined;
    } catch (error) {
      const message = errorMessage(error);
      // Keep the last values read (if any): a label is better slightly stale than gone from the records.
      if (message !== this.#lastError) {
        const status = (error as { status?: number }).status;
        this.#o.logger[status === 403 ? 'error' : 'warn'](
          { err: message, node: this.#o.nodeName },
          'cannot read the node labels for records; retrying',
        );
      }
      this.#lastError = message;
    }
    if (this.#stopped) return;
    const next = ok ? (this.#o.refreshMs ?? LABELS_REFRESH_MS) : (this.#o.retryMs ?? LABELS_RETRY_MS);
    this.#timer = setTimeout(() => void this.#read(), next);
    this.#timer.unref();
  }
}
