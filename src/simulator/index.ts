/**
 * IMDS simulator: a local HTTP server that behaves like Azure's Instance Metadata Service for Scheduled
 * Events, instance metadata and managed identity tokens, serving one primary VM at the root paths and any
 * number of other VM identities under /vms/<name>/. See docs/simulator.md.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { type Clock, systemClock } from '../clock.ts';
import type { VmIdentity } from '../domain/index.ts';
import { type Logger, silentLogger } from '../log.ts';
import { createAdmin, type RequestLogEntry, type SimulatorAdmin } from './admin.ts';
import { type SimClock, VirtualClock } from './clock.ts';
import { FaultController, type FaultInput } from './faults.ts';
import { applyScenario, loadScenario, type Scenario } from './scenario.ts';
import { createHandler } from './server.ts';
import { SimulatorState } from './state.ts';

const { createServer } = process.getBuiltinModule('node:http');

export type { RequestLogEntry, SimulatorAdmin } from './admin.ts';
export { parseDuration, type SimClock, VirtualClock } from './clock.ts';
export { type InjectEventInput, injectEventSchema, type SimEvent, type SimEventStatus } from './events.ts';
export { type Fault, type FaultInput, faultSchema, parseFaultSpec } from './faults.ts';
export { decodeJwtPayload, deriveIdentity, type SimVm } from './identity.ts';
export { listScenarios, loadScenario, parseScenario, SCENARIOS_DIR, type Scenario } from './scenario.ts';
export type { ApprovalRecord, SimDocument, VmOptions } from './state.ts';
export { SCHEDULED_EVENTS_API_VERSIONS } from './versions.ts';

/** Default name of the primary VM. */
export const DEFAULT_VM_NAME = 'sim-vm-0';

export interface SimulatorOptions {
  /** Interface to bind; default 127.0.0.1 (never anything else unless asked). */
  host?: string;
  /** Port; default 0 (any free port). */
  port?: number;
  /** Name of the primary VM (root paths); default the scenario's primaryVm, else "sim-vm-0". */
  vmName?: string;
  /** Identity overrides of the primary VM. */
  vm?: Partial<VmIdentity>;
  /** Availability set of VMs registered without one (default "sim-avset"). */
  availabilitySet?: string;
  /** A scenario object, or a YAML path / bundled scenario name. */
  scenario?: Scenario | string;
  /**
   * Simulated ms per real ms (default: the scenario's timeScale, else 1; 0 = time moves only with
   * admin.advance). Ignored with `clock`.
   */
  timeScale?: number;
  /** Custom clock (default a VirtualClock with timeScale). */
  clock?: SimClock;
  /** DocumentIncarnation of new VMs (default 1). */
  initialIncarnation?: number;
  /** Faults active from the start. */
  faults?: FaultInput[];
  /**
   * Real (not simulated) time: the rate-limit window, injected latency, and the default VirtualClock's
   * elapsed time. Default systemClock; inject test/support/fake-clock.ts for deterministic tests.
   */
  realClock?: Clock;
  /** How often (real ms) due transitions are applied without requests (default 20). */
  syncIntervalMs?: number;
  logger?: Logger;
}

export interface RunningSimulator {
  /** Base URL, e.g. http://127.0.0.1:PORT (the primary VM's IMDS endpoint). */
  url: string;
  port: number;
  /** Endpoint prefix for another VM identity: `${url}/vms/${name}`. */
  vmUrl(name: string): string;
  admin: SimulatorAdmin;
  close(): Promise<void>;
}

const REQUEST_LOG_LIMIT = 10_000;

/** Starts a simulator. Resolves once it listens. */
export async function startSimulator(options: SimulatorOptions = {}): Promise<RunningSimulator> {
  const logger = (options.logger ?? silentLogger()).child({ component: 'simulator' });
  const scenario = typeof options.scenario === 'string' ? loadScenario(options.scenario) : options.scenario;
  const realClock = options.realClock ?? systemClock;
  const clock =
    options.clock ??
    new VirtualClock({ timeScale: options.timeScale ?? scenario?.timeScale ?? 1, realClock });
  const primaryVmName = options.vmName ?? options.vm?.name ?? scenario?.primaryVm ?? DEFAULT_VM_NAME;
  const state = new SimulatorState({
    clock,
    primaryVmName,
    primaryVm: { ...(options.vm ? { identity: options.vm } : {}) },
    ...(options.availabilitySet ? { defaultAvailabilitySet: options.availabilitySet } : {}),
    ...(options.initialIncarnation !== undefined || scenario?.initialIncarnation !== undefined
      ? { initialIncarnation: options.initialIncarnation ?? scenario?.initialIncarnation }
      : {}),
    onChange: (change) => logger.info({ simTime: new Date(change.at).toISOString() }, change.what),
  });
  const faults = new FaultController(realClock);
  if (options.faults) faults.set(options.faults);

  let scenarioEnd: { endMs: number | null } | null = null;
  if (scenario) scenarioEnd = applyScenario(state, faults, scenario, clock.now());
  let done = false;
  let resolveEnded: () => void = () => {};
  const ended = new Promise<void>((resolve) => {
    resolveEnded = resolve;
  });

  const sync = (): void => {
    try {
      state.sync();
    } catch (error) {
      logger.error({ err: error }, 'scenario step failed');
    }
    if (!done && scenarioEnd) {
      const reached =
        scenarioEnd.endMs !== null
          ? clock.now() >= scenarioEnd.endMs
          : state.pendingActions() === 0 && state.events().length === 0;
      if (reached) {
        done = true;
        logger.info({ scenario: scenario?.name }, 'scenario ended');
        resolveEnded();
      }
    }
  };

  let count = 0;
  const log: RequestLogEntry[] = [];
  const admin = createAdmin({
    state,
    faults,
    clock,
    sync,
    requests: () => ({ count, log: log.map((e) => ({ ...e })) }),
    scenarioDone: () => done,
    scenarioEnded: () => ended,
  });
  const handler = createHandler({
    state,
    faults,
    admin,
    sync,
    logger,
    realClock,
    record: (entry) => {
      count++;
      log.push({ seq: count, at: new Date().toISOString(), ...entry });
      if (log.length > REQUEST_LOG_LIMIT) log.shift();
    },
  });

  const server = createServer(handler);
  const host = options.host ?? '127.0.0.1';
  server.listen(options.port ?? 0, host);
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const timer = setInterval(sync, options.syncIntervalMs ?? 20);
  timer.unref();
  sync();
  // Not `url`: that key is redacted in logs (webhook URLs are secrets); the simulator's own address is not.
  logger.info({ listen: url, vm: primaryVmName, scenario: scenario?.name }, 'IMDS simulator listening');

  return {
    url,
    port,
    vmUrl: (name: string) => `${url}/vms/${encodeURIComponent(name)}`,
    admin,
    close: async () => {
      clearInterval(timer);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
