/**
 * `run`'s reload signal (SIGHUP; none on Windows: src/platform.ts reloadSignal), taken from the moment the command
 * begins. A SIGHUP that arrives while the configuration loads or the forwarder starts is held and handed on once
 * the forwarder runs (Forwarder.reload itself waits for the start), instead of the default action, which ends the
 * process (exit 129, no log line). After the run it is still taken, and ignored, so that a late SIGHUP never turns
 * a clean stop into an exit by signal.
 */
import type { Logger } from '../log.ts';
import { reloadSignal } from '../platform.ts';

export class ReloadRequests {
  readonly signal: NodeJS.Signals | undefined;
  #reload: (() => void) | undefined;
  #held = false;
  #ended: Logger | undefined;
  readonly #onSignal = (): void => {
    if (this.#ended !== undefined)
      this.#ended.info({ signal: this.signal }, 'stopping: configuration reload ignored');
    else if (this.#reload !== undefined) this.#reload();
    else this.#held = true; // one held request is enough: the reload reads the file as it is then
  };

  /** Takes the platform's reload signal now (nothing on a platform without one). */
  constructor(platform: NodeJS.Platform = process.platform) {
    this.signal = reloadSignal(platform);
    if (this.signal !== undefined) process.on(this.signal, this.#onSignal);
  }

  /** From now on each signal calls `reload`; a signal held since the start calls it at once. */
  attach(reload: () => void): void {
    this.#reload = reload;
    if (this.#held) {
      this.#held = false;
      reload();
    }
  }

  /** The run is over: later signals are logged and ignored. */
  end(logger: Logger): void {
    this.#reload = undefined;
    this.#ended = logger;
  }

  /** Gives the signal back (tests: the process's default action returns). */
  dispose(): void {
    if (this.signal !== undefined) process.off(this.signal, this.#onSignal);
  }
}
