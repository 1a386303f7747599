/**
 * Pure approval policy: which rule applies to a Scheduled event, and whether this VM is the leader that may
 * POST the approval. No I/O.
 */
import type { ScheduledEvent, VmIdentity } from '../domain/index.ts';
import type { ApprovalAction, ApprovalMatch, ApprovalRule, LeaderMode } from './config.ts';

/** The rule name reported when no configured rule matched (the observe-only default). */
export const DEFAULT_RULE = 'default';

/** What the policy engine knows about the event besides its IMDS fields. */
export interface DecisionContext {
  /** This VM's name is in Resources. */
  affectsThisVm: boolean;
}

export interface Decision {
  action: ApprovalAction;
  /** Name of the matching rule, or DEFAULT_RULE. */
  rule: string;
}

function inRange(
  value: number,
  range: { min?: number | undefined; max?: number | undefined } | undefined,
): boolean {
  if (range === undefined) return true;
  if (range.min !== undefined && value < range.min) return false;
  if (range.max !== undefined && value >= range.max) return false;
  return true;
}

function oneOf(value: string, allowed: readonly string[] | undefined): boolean {
  if (allowed === undefined) return true;
  const lower = value.toLowerCase();
  return allowed.some((a) => a.toLowerCase() === lower);
}

/** True when every condition given in `match` holds for the event. */
export function matches(match: ApprovalMatch, event: ScheduledEvent, context: DecisionContext): boolean {
  return (
    oneOf(event.EventType, match.eventTypes) &&
    oneOf(event.EventSource, match.eventSources) &&
    inRange(event.DurationInSeconds, match.durationInSeconds) &&
    (match.affectsThisVm === undefined || match.affectsThisVm === context.affectsThisVm) &&
    inRange(event.Resources.length, match.resources)
  );
}

/**
 * The first rule (in order) whose match holds decides; without one the action is `never` (observe only).
 * Only Scheduled events can be approved: any other status gives `never` with the default rule.
 */
export function decide(
  event: ScheduledEvent,
  context: DecisionContext,
  rules: readonly ApprovalRule[],
): Decision {
  if (event.EventStatus.toLowerCase() !== 'scheduled') return { action: 'never', rule: DEFAULT_RULE };
  for (const rule of rules) {
    if (matches(rule.match, event, context)) return { action: rule.action, rule: rule.name };
  }
  return { action: 'never', rule: DEFAULT_RULE };
}

/** Resource-name comparison as the transform does it: case-insensitive, without the pre-2017 leading '_'. */
function normalise(name: string): string {
  return name.replace(/^_/, '').toLowerCase();
}

/**
 * Whether this VM is the one that POSTs the approval. A VM that is not in Resources is never the leader (it
 * must not release maintenance of other machines); an unknown identity is never the leader.
 *  - `first`: the first name in Resources (the docs' suggestion);
 *  - `lowest-name`: the smallest name in code-point order of the normalised names;
 *  - `any`: every affected VM (several POSTs are harmless: a valid EventId always gets 200).
 */
export function isLeader(
  mode: LeaderMode,
  resources: readonly string[],
  vm: VmIdentity | undefined,
): boolean {
  if (!vm?.name || resources.length === 0) return false;
  const own = normalise(vm.name);
  const names = resources.map(normalise);
  if (!names.includes(own)) return false;
  if (mode === 'any') return true;
  if (mode === 'first') return names[0] === own;
  const lowest = [...names].sort()[0];
  return lowest === own;
}

/** True when a hook configured for `eventTypes` (empty = all) applies to this EventType. */
export function hookApplies(eventTypes: readonly string[], eventType: string): boolean {
  return eventTypes.length === 0 || oneOf(eventType, eventTypes);
}
