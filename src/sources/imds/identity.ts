/**
 * Cached VM identity (instance metadata, compute section). Fetched at start, refreshed periodically
 * (default hourly) and on demand (after a reboot is detected). A failed refresh is logged once per streak
 * and keeps the last good value.
 */

import { type Clock, systemClock } from '../../clock.ts';
import type { VmIdentity } from '../../domain/index.ts';
import { errorMessage } from '../../errors.ts';
import type { Logger } from '../../log.ts';
import type { ImdsClient } from './client.ts';
import { DEFAULT_IDENTITY_REFRESH_MS } from './defaults.ts';

export interface VmIdentityCacheOptions {
  client: Pick<ImdsClient, 'getInstanceMetadata'>;
  /** Periodic refresh interval (default 1 h). */
  refreshIntervalMs?: number;
  clock?: Clock;
  logger: Logger;
}

/** Holds the current VM identity; see the module comment. */
export class VmIdentityCache {
  readonly #client: Pick<ImdsClient, 'getInstanceMetadata'>;
  readonly #refreshIntervalMs: number;
  readonly #clock: Clock;
  readonly #logger: Logger;
  #identity: VmIdentity | undefined;
  #failing = false;
  #inFlight: Promise<VmIdentity | undefined> | undefined;
  #timer: unknown;
  #running = false;
  #signal: AbortSignal | undefined;

  constructor(options: VmIdentityCacheOptions) {
    this.#client = options.client;
    this.#refreshIntervalMs = options.refreshIntervalMs ?? DEFAULT_IDENTITY_REFRESH_MS;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger;
  }

  /** The last successfully fetched identity, or undefined before the first success. */
  current(): VmIdentity | undefined {
    return this.#identity;
  }

  /**
   * Fetch now and refresh every refreshIntervalMs until `signal` aborts or stop() is called.
   * Resolves after the first fetch attempt (with the identity, or undefined when it failed).
   */
  start(signal?: AbortSignal): Promise<VmIdentity | undefined> {
    if (this.#running) return this.refresh();
    this.#running = true;
    this.#signal = signal;
    signal?.addEventListener('abort', () => this.stop(), { once: true });
    return this.#periodicRefresh();
  }

  /** Stop periodic refreshes. */
  stop(): void {
    this.#running = false;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /**
   * Fetch the identity now (concurrent calls share one request). Resolves with the current identity: the new
   * one on success, the last good one on failure. Never rejects.
   */
  refresh(): Promise<VmIdentity | undefined> {
    this.#inFlight ??= this.#fetch().finally(() => {
      this.#inFlight = undefined;
    });
    return this.#inFlight;
  }

  async #periodicRefresh(): Promise<VmIdentity | undefined> {
    const identity = await this.refresh();
    if (this.#running) {
      this.#timer = this.#clock.setTimeout(() => void this.#periodicRefresh(), this.#refreshIntervalMs);
    }
    return identity;
  }

  async #fetch(): Promise<VmIdentity | undefined> {
    try {
      const identity = await this.#client.getInstanceMetadata(this.#signal);
      if (this.#failing) this.#logger.info('VM identity refresh recovered');
      if (this.#identity?.vmId !== identity.vmId || this.#identity?.name !== identity.name) {
        this.#logger.info({ vmName: identity.name, vmId: identity.vmId }, 'VM identity');
      }
      this.#failing = false;
      this.#identity = identity;
    } catch (error) {
      if (this.#signal?.aborted) return this.#identity;
      if (!this.#failing) {
        const message = errorMessage(error);
        this.#logger.warn(
          { hasPrevious: this.#identity !== undefined },
          `could not fetch VM identity from IMDS instance metadata (keeping the last good value): ${message}`,
        );
      }
      this.#failing = true;
    }
    return this.#identity;
  }
}
