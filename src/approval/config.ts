/**
 * The `approval` section of the configuration (one zod schema, wired into src/config/schema.ts as a top-level
 * section). Without it the forwarder only observes: no rule, so nothing is ever approved. See docs/approval.md.
 */
import { z } from 'zod';
import {
  ENV_DESCRIPTION,
  envSetSchema,
  PASS_ENV_DESCRIPTION,
  passEnvSchema,
} from '../process/env-options.ts';

/** What a matching rule does with a Scheduled event. */
export const APPROVAL_ACTIONS = ['approve', 'approve-after-hooks', 'never'] as const;
export type ApprovalAction = (typeof APPROVAL_ACTIONS)[number];

/** Who may POST an approval: an approval releases the event for ALL its Resources. */
export const LEADER_MODES = ['first', 'lowest-name', 'any'] as const;
export type LeaderMode = (typeof LEADER_MODES)[number];

const range = (what: string) =>
  z
    .object({
      min: z.number().int().optional().describe(`Smallest ${what} that matches (inclusive).`),
      max: z.number().int().optional().describe(`${what} must be below this (exclusive).`),
    })
    .strict()
    .refine((r) => r.min === undefined || r.max === undefined || r.min < r.max, {
      message: 'min must be smaller than max (min is inclusive, max exclusive)',
    });

const matchSchema = z
  .object({
    eventTypes: z
      .array(z.string().min(1))
      .optional()
      .describe('EventType values (case-insensitive: Freeze, Reboot, Redeploy, Preempt, Terminate).'),
    eventSources: z
      .array(z.string().min(1))
      .optional()
      .describe('EventSource values (case-insensitive: Platform, User).'),
    durationInSeconds: range('DurationInSeconds')
      .optional()
      .describe('DurationInSeconds range {min (inclusive), max (exclusive)}; -1 means unknown.'),
    affectsThisVm: z
      .boolean()
      .optional()
      .describe("Whether this VM's name must (or must not) be in Resources."),
    resources: range('number of Resources')
      .optional()
      .describe('Number of Resources range {min (inclusive), max (exclusive)}.'),
  })
  .strict()
  .prefault({})
  .describe(
    'Conditions (all given ones must hold; a list matches any of its values). Empty matches every event.',
  );

const ruleSchema = z
  .object({
    name: z.string().min(1).describe('Rule name (recorded in the approved record as `approval.rule`).'),
    match: matchSchema,
    action: z
      .enum(APPROVAL_ACTIONS)
      .describe(
        '"approve": POST at once; "approve-after-hooks": run the prepare hooks first, POST only if all succeeded; "never": let NotBefore lapse.',
      ),
  })
  .strict();

/** Built-in hooks (instead of a command): implemented by src/kubernetes (docs/kubernetes.md). */
export const BUILTIN_HOOKS = ['kubernetes-node'] as const;
export type BuiltinHookName = (typeof BUILTIN_HOOKS)[number];

const hookSchema = z
  .object({
    name: z.string().min(1).describe('Hook name (logs and the approved record).'),
    command: z
      .string()
      .min(1)
      .refine((v) => !v.includes('\0'), { error: 'command cannot contain a NUL character' })
      .optional()
      .describe('Executable (no shell). Use an absolute path. Exactly one of command and builtin.'),
    builtin: z
      .enum(BUILTIN_HOOKS)
      .optional()
      .describe(
        '"kubernetes-node": in prepare, cordon/taint/label/drain this node as kubernetes.actions says; in recover, undo exactly that (needs kubernetes.enabled).',
      ),
    args: z
      .array(
        z.string().refine((v) => !v.includes('\0'), { error: 'an argument cannot contain a NUL character' }),
      )
      .default([])
      .describe('Arguments.'),
    eventTypes: z
      .array(z.string().min(1))
      .default([])
      .describe('Run only for these EventTypes (case-insensitive); empty = every type.'),
    timeoutMs: z
      .number()
      .int()
      .positive()
      .default(300_000)
      .describe('Kill the hook after this long; never later than NotBefore minus safetyMarginMs.'),
    env: envSetSchema.describe(`Environment: ${ENV_DESCRIPTION}.`),
    passEnv: passEnvSchema.describe(`Environment: ${PASS_ENV_DESCRIPTION}.`),
  })
  .strict()
  .refine((hook) => (hook.command === undefined) !== (hook.builtin === undefined), {
    message: 'give exactly one of command and builtin',
  });

/** The `approval` config section. */
export const approvalSection = z
  .object({
    dryRun: z
      .boolean()
      .default(false)
      .describe('Decide, run hooks and record, but never POST an approval (logs what would be approved).'),
    leader: z
      .enum(LEADER_MODES)
      .default('first')
      .describe(
        'Who POSTs: "first" name in Resources (the docs\' suggestion), "lowest-name" (sorted), "any" affected VM.',
      ),
    safetyMarginMs: z
      .number()
      .int()
      .min(0)
      .default(30_000)
      .describe('Prepare hooks must end this long before NotBefore; their timeout is cut to fit.'),
    shortNoticeMarginMs: z
      .number()
      .int()
      .min(0)
      .default(5000)
      .describe(
        'The margin for short-notice events (notice below twice safetyMarginMs, e.g. Preempt with 30 s): hooks end this long before NotBefore instead, so the margin never eats the notice.',
      ),
    rerunHooksAfterRestart: z
      .boolean()
      .default(false)
      .describe(
        'After a restart, run prepare hooks again for events not yet approved (default: reuse results).',
      ),
    maxHookOutputBytes: z
      .number()
      .int()
      .positive()
      .default(4096)
      .describe('Hook stdout/stderr kept for the logs (each, bytes).'),
    rules: z
      .array(ruleSchema)
      .default([])
      .describe(
        'Evaluated in order for each Scheduled event; the first match decides. None = never approve.',
      ),
    hooks: z
      .object({
        prepare: z
          .array(hookSchema)
          .default([])
          .describe(
            'Run (in order, stopping at the first failure) when an event affecting this VM is Scheduled.',
          ),
        recover: z
          .array(hookSchema)
          .default([])
          .describe('Run (all, in order) when an event affecting this VM is Completed or Canceled.'),
      })
      .strict()
      .prefault({})
      .describe('Commands with the lifecycle record on stdin and SEF_* variables in the environment.'),
  })
  .strict()
  .superRefine((section, ctx) => {
    const seen = new Set<string>();
    section.rules.forEach((rule, index) => {
      if (seen.has(rule.name)) {
        ctx.addIssue({
          code: 'custom',
          path: ['rules', index, 'name'],
          message: `duplicate rule name "${rule.name}"`,
        });
      }
      seen.add(rule.name);
    });
  })
  .prefault({})
  .describe('Approving (starting) Scheduled events early: policy rules, leader, prepare/recover hooks.');

/** The validated `approval` section with defaults applied. */
export type ApprovalConfig = z.output<typeof approvalSection>;
export type ApprovalRule = ApprovalConfig['rules'][number];
export type ApprovalMatch = ApprovalRule['match'];
export type HookConfig = ApprovalConfig['hooks']['prepare'][number];

/** The observe-only default: no rules, no hooks. */
export function defaultApprovalConfig(): ApprovalConfig {
  return approvalSection.parse(undefined);
}
