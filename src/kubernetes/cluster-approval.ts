/**
 * Cluster-aware approval (docs/kubernetes.md#multi-node-events): approval's PeerGate over the Nodes of this cluster.
 * One Scheduled Event can name several VMs, and one approval starts it for all of them, so a node must not approve
 * while another affected node still runs its pods. Each forwarder publishes its prepare state per event on its own
 * Node (the annotation scheduled-events-forwarder/prepare, a JSON merge patch of that key only); the forwarder that
 * approves reads the other affected nodes — found by their AKS names and checked by spec.providerID
 * (src/kubernetes/vm-nodes.ts) — and approves only when each one is ready. Only `get` and `patch` on nodes, which
 * the node hook already needs: RBAC gains nothing.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { PeerCheck, PeerGate, PeerStatus, PrepareState } from '../approval/index.ts';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { NodeApi } from './client.ts';
import { type KubernetesConfig, PREPARE_ANNOTATION } from './config.ts';
import { nodeIsVm, nodeNameForVm, type PublishedState, publishedStates, publishValue } from './vm-nodes.ts';

/** Waits between attempts to publish after a failed write: doubling from the first, capped. */
const PUBLISH_RETRY_FIRST_MS = 1000;
const PUBLISH_RETRY_MAX_MS = 30_000;

export interface ClusterPeersOptions {
  api: () => Promise<NodeApi>;
  /** This node. */
  nodeName: string;
  config: KubernetesConfig['clusterApproval'];
  logger: Logger;
  now?: () => number;
}

/** See the module comment. */
export class ClusterPeers implements PeerGate {
  readonly #o: ClusterPeersOptions;
  readonly #now: () => number;
  readonly #stop = new AbortController();
  #desired: ReadonlyMap<string, PrepareState> = new Map();
  #desiredKey = '[]';
  /** What the annotation says (as far as this process knows): undefined until read or written. */
  #written: { key: string; states: Record<string, PublishedState> } | undefined;
  #flushing: Promise<void> | undefined;
  #lastError: string | undefined;

  constructor(options: ClusterPeersOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  get pollIntervalMs(): number {
    return this.#o.config.pollIntervalMs;
  }

  publish(states: ReadonlyMap<string, PrepareState>): void {
    const key = JSON.stringify([...states].sort(([a], [b]) => a.localeCompare(b)));
    if (key === this.#desiredKey) return;
    this.#desired = states;
    this.#desiredKey = key;
    this.#flushing ??= this.#flush().finally(() => {
      this.#flushing = undefined;
    });
  }

  async check(eventId: string, others: readonly string[], signal: AbortSignal): Promise<PeerCheck> {
    const statuses = await Promise.all(others.map((vm) => this.#checkOne(eventId, vm, signal)));
    const result: PeerCheck = { blocked: [], waiting: [] };
    for (const status of statuses) {
      if (status === 'ready') continue;
      result[status.kind].push(status.status);
    }
    return result;
  }

  /** Ends publishing retries; resolves once a write in progress ended. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#flushing;
  }

  async #checkOne(
    eventId: string,
    vm: string,
    signal: AbortSignal,
  ): Promise<'ready' | { kind: 'blocked' | 'waiting'; status: PeerStatus }> {
    const nodeName = nodeNameForVm(vm);
    const where = `node ${nodeName}`;
    const waiting = (why: string) => ({ kind: 'waiting' as const, status: { vm, where, why } });
    const blocked = (why: string) => ({ kind: 'blocked' as const, status: { vm, where, why } });
    const outside = (why: string) =>
      this.#o.config.vmsOutsideCluster === 'ignore'
        ? ('ready' as const)
        : {
            kind: 'blocked' as const,
            status: {
              vm,
              why: `not a node of this cluster (${why}): its preparation cannot be seen (kubernetes.clusterApproval.vmsOutsideCluster)`,
            },
          };
    let node: Awaited<ReturnType<NodeApi['readNode']>>;
    try {
      node = await (await this.#o.api()).readNode(nodeName, signal);
    } catch (error) {
      if ((error as { status?: number }).status === 404) return outside(`no node ${nodeName}`);
      return waiting(`cannot read ${where}: ${errorMessage(error)}`);
    }
    if (!nodeIsVm(node, vm)) {
      return outside(`node ${nodeName} is another VM: providerID ${node.providerID ?? '(unset)'}`);
    }
    const state = publishedStates(node)[eventId];
    if (state === undefined) {
      return waiting(
        'no prepare state published for this event yet (is the forwarder running on that node, with kubernetes.enabled?)',
      );
    }
    const since = state.at === undefined ? '' : ` since ${state.at}`;
    if (state.state === 'preparing') return waiting(`preparing${since}`);
    if (state.state === 'failed')
      return blocked(`its preparation failed${since}: ${state.detail ?? 'no detail'}`);
    return 'ready';
  }

  /** Writes the desired states until the annotation says them (retrying with backoff), or until stop. */
  async #flush(): Promise<void> {
    for (let failures = 0; !this.#stop.signal.aborted; ) {
      const key = this.#desiredKey;
      const states = this.#desired;
      if (this.#written?.key === key) return;
      try {
        const api = await this.#o.api();
        if (this.#written === undefined) {
          // After a restart: keep the times of states that did not change.
          const own = await api.readNode(this.#o.nodeName, this.#stop.signal);
          this.#written = { key: '', states: publishedStates(own) };
        }
        const value = publishValue(states, this.#written.states, new Date(this.#now()).toISOString());
        await api.patchNode(
          this.#o.nodeName,
          { metadata: { annotations: { [PREPARE_ANNOTATION]: value } } },
          this.#stop.signal,
        );
        this.#written = {
          key,
          states: value === null ? {} : (JSON.parse(value) as Record<string, PublishedState>),
        };
        failures = 0;
        if (this.#lastError !== undefined) this.#o.logger.info('prepare state published again');
        this.#lastError = undefined;
      } catch (error) {
        if (this.#stop.signal.aborted) return;
        const message = errorMessage(error);
        if (message !== this.#lastError) {
          this.#o.logger[(error as { status?: number }).status === 403 ? 'error' : 'warn'](
            { err: message },
            'cannot publish the prepare state on this node; other nodes will not approve events affecting it until it is; retrying',
          );
        }
        this.#lastError = message;
        failures++;
        const wait = Math.min(PUBLISH_RETRY_MAX_MS, PUBLISH_RETRY_FIRST_MS * 2 ** (failures - 1));
        await sleep(wait, undefined, { signal: this.#stop.signal }).catch(() => {});
      }
    }
  }
}
