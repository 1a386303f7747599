/**
 * The approval policy's warning for `config validate` (and `run` at start-up, src/config/warnings.ts): a rule that
 * runs prepare hooks and can approve an event affecting other VMs. An approval starts the event for EVERY VM in its
 * Resources, so after this VM's hooks alone it also releases VMs whose preparation this forwarder cannot see
 * (docs/approval.md#events-that-affect-several-vms). Safe: rules that only match single-VM events, or Kubernetes
 * with cluster-aware approval (every affected node must be prepared first).
 */
import type { ApprovalConfig } from './config.ts';

export interface ApprovalWarning {
  path: string;
  message: string;
}

const lower = (list: readonly string[]) => list.map((v) => v.toLowerCase());

/**
 * One warning per such rule. `peerGate`: `kubernetes.enabled` with `kubernetes.clusterApproval.enabled`, which makes
 * `approve-after-hooks` wait for the other affected nodes.
 */
export function multiVmApprovalWarnings(approval: ApprovalConfig, peerGate: boolean): ApprovalWarning[] {
  const warnings: ApprovalWarning[] = [];
  approval.rules.forEach((rule, index) => {
    if (rule.action === 'never') return;
    if (peerGate && rule.action === 'approve-after-hooks') return;
    const max = rule.match.resources?.max;
    if (max !== undefined && max <= 2) return; // only events with at most one VM in Resources
    const types = rule.match.eventTypes === undefined ? undefined : lower(rule.match.eventTypes);
    const hooks = approval.hooks.prepare.filter(
      (hook) =>
        types === undefined ||
        hook.eventTypes.length === 0 ||
        lower(hook.eventTypes).some((t) => types.includes(t)),
    );
    if (hooks.length === 0) return;
    const path = `approval.rules[${index}]`;
    warnings.push({
      path,
      message:
        `${path} (${rule.name}, ${rule.action}) runs prepare hooks (${hooks.map((h) => h.name).join(', ')}) and can ` +
        'approve an event that affects other VMs too: an approval starts the event for every VM in Resources, ' +
        'including VMs whose preparation this forwarder cannot see (docs/approval.md#events-that-affect-several-vms). ' +
        'Safe forms: match.resources: { max: 2 } (events of this VM alone; max is exclusive), or on AKS ' +
        'kubernetes.enabled with kubernetes.clusterApproval and action approve-after-hooks (every affected node must ' +
        'be prepared first).',
    });
  });
  return warnings;
}
