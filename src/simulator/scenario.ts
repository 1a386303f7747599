/**
 * Scenarios: YAML files (config/scenarios/*.yaml) with VMs and timed steps (offsets in simulated time)
 * that drive the simulator through a maintenance story. See docs/simulator.md for the format.
 */
import { basename, dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { errorMessage } from '../errors.ts';
import { listPackageDir, packageFileExists, readPackageFile } from '../package-files.ts';
import { parseDuration } from './clock.ts';
import { injectEventSchema } from './events.ts';
import { type FaultController, faultSchema } from './faults.ts';
import type { SimulatorState } from './state.ts';

const durationLike = z.union([z.number().nonnegative(), z.string().min(1)]);
const idList = z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]);

const vmSchema = z.strictObject({
  name: z.string().min(1),
  availabilitySet: z.string().min(1).optional(),
  incarnation: z.number().int().nonnegative().optional(),
  identity: z.record(z.string(), z.string()).optional(),
});

const stepSchema = z
  .strictObject({
    /** Offset from the scenario start, simulated time (seconds or "15m"). */
    at: durationLike,
    /** Free text shown in logs. */
    note: z.string().optional(),
    inject: injectEventSchema.optional(),
    /** Another VM (or an operator) approves: `{ ids, vm }`. */
    approve: z.strictObject({ ids: idList, vm: z.string().min(1).optional() }).optional(),
    setStatus: z.strictObject({ id: z.string().min(1), status: z.enum(['Scheduled', 'Started']) }).optional(),
    /** Remove events: cancel (Scheduled) or complete (Started). */
    remove: idList.optional(),
    /** Move NotBefore: absolute `notBefore` or `noticeSeconds` from this step's time. */
    reschedule: z
      .strictObject({
        id: z.string().min(1),
        notBefore: z.union([z.string(), z.number()]).optional(),
        noticeSeconds: durationLike.optional(),
      })
      .refine((r) => (r.notBefore === undefined) !== (r.noticeSeconds === undefined), {
        message: 'reschedule needs exactly one of notBefore or noticeSeconds',
      })
      .optional(),
    /** The VM (default: the primary) moved to another host: DocumentIncarnation restarts. */
    moveVm: z
      .strictObject({
        vm: z.string().min(1).optional(),
        incarnation: z.number().int().nonnegative().default(1),
      })
      .optional(),
    faults: z.array(faultSchema).optional(),
    clearFaults: z.literal(true).optional(),
  })
  .refine(
    (s) =>
      ['inject', 'approve', 'setStatus', 'remove', 'reschedule', 'moveVm', 'faults', 'clearFaults'].filter(
        (k) => s[k as keyof typeof s] !== undefined,
      ).length === 1,
    {
      message:
        'each step needs exactly one action: inject, approve, setStatus, remove, reschedule, moveVm, faults or clearFaults',
    },
  );

export const scenarioSchema = z.strictObject({
  name: z.string().min(1),
  description: z.string().default(''),
  /** The VM served at the root paths (overridable with --vm-name / options.vmName). */
  primaryVm: z.string().min(1).optional(),
  vms: z.array(vmSchema).default([]),
  initialIncarnation: z.number().int().nonnegative().optional(),
  /** Suggested time scale (used when the caller gives none). */
  timeScale: z.number().nonnegative().optional(),
  /** End the scenario at this offset even if events remain (default: when all steps ran and no event is left). */
  endAfter: durationLike.optional(),
  steps: z.array(stepSchema).default([]),
});

export type Scenario = z.output<typeof scenarioSchema>;
export type ScenarioStep = Scenario['steps'][number];

/** config/scenarios of this package. */
export const SCENARIOS_DIR = resolve(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'config',
  'scenarios',
);

/** Parses and validates a scenario object; the error names the scenario and the bad field. */
export function parseScenario(value: unknown, origin = 'scenario'): Scenario {
  const result = scenarioSchema.safeParse(value);
  if (!result.success) {
    const issues = result.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new Error(`invalid scenario ${origin}: ${issues}`);
  }
  for (const [index, step] of result.data.steps.entries())
    parseDuration(step.at, `${origin} steps.${index}.at`);
  return result.data;
}

/**
 * Loads a scenario from a YAML file, or by name from config/scenarios (e.g. "user-reboot").
 */
export function loadScenario(pathOrName: string): Scenario {
  let file = pathOrName;
  if (!packageFileExists(file)) {
    const named = join(SCENARIOS_DIR, extname(pathOrName) ? pathOrName : `${pathOrName}.yaml`);
    if (!packageFileExists(named)) {
      const known = listScenarios()
        .map((s) => s.name)
        .join(', ');
      throw new Error(`scenario "${pathOrName}" not found (not a file; known scenarios: ${known})`);
    }
    file = named;
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(readPackageFile(file));
  } catch (error) {
    throw new Error(`scenario ${file} is not valid YAML: ${errorMessage(error)}`);
  }
  return parseScenario(parsed, file);
}

/** The bundled scenarios (config/scenarios/*.yaml) with their names and descriptions. */
export function listScenarios(
  dir: string = SCENARIOS_DIR,
): Array<{ name: string; file: string; description: string }> {
  if (!packageFileExists(dir)) return [];
  return listPackageDir(dir)
    .filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'))
    .sort()
    .map((f) => {
      const file = join(dir, f);
      const scenario = loadScenario(file);
      return { name: basename(f, extname(f)), file, description: scenario.description };
    });
}

/** Registers the scenario's VMs and schedules its steps from `startMs` (simulated time). */
export function applyScenario(
  state: SimulatorState,
  faults: FaultController,
  scenario: Scenario,
  startMs: number,
): { endMs: number | null; lastStepMs: number } {
  for (const vm of scenario.vms) {
    state.ensureVm(vm.name, {
      ...(vm.availabilitySet ? { availabilitySet: vm.availabilitySet } : {}),
      ...(vm.incarnation !== undefined ? { incarnation: vm.incarnation } : {}),
      ...(vm.identity ? { identity: vm.identity } : {}),
    });
  }
  let lastStepMs = startMs;
  for (const [index, step] of scenario.steps.entries()) {
    const due = startMs + parseDuration(step.at, `steps.${index}.at`);
    lastStepMs = Math.max(lastStepMs, due);
    state.schedule(due, step.note ?? `step ${index}`, () => runStep(state, faults, step, due));
  }
  const endMs =
    scenario.endAfter === undefined ? null : startMs + parseDuration(scenario.endAfter, 'endAfter');
  return { endMs, lastStepMs };
}

function ids(value: string | string[]): string[] {
  return Array.isArray(value) ? value : [value];
}

function runStep(state: SimulatorState, faults: FaultController, step: ScenarioStep, atMs: number): void {
  if (step.inject) state.inject(step.inject, atMs);
  else if (step.approve) {
    const { unknown } = state.approve(step.approve.vm ?? 'scenario', ids(step.approve.ids), atMs);
    if (unknown.length > 0) throw new RangeError(`approve step: unknown EventId ${unknown.join(', ')}`);
  } else if (step.setStatus) state.setStatus(step.setStatus.id, step.setStatus.status, atMs);
  else if (step.remove) for (const id of ids(step.remove)) state.remove(id, atMs);
  else if (step.reschedule) {
    const r = step.reschedule;
    const target = r.notBefore ?? atMs + parseDuration(r.noticeSeconds ?? 0, 'noticeSeconds');
    state.reschedule(r.id, target, atMs);
  } else if (step.moveVm) state.moveVm(step.moveVm.vm ?? state.primaryVmName, step.moveVm.incarnation);
  else if (step.faults) faults.set(step.faults);
  else if (step.clearFaults) faults.clear();
}
