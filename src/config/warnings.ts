/**
 * The warnings about a valid configuration: things `run` accepts but that will probably not work as meant. One
 * function for both: `config validate` prints them (exit 0: they are not errors), `run` logs each at start-up
 * (src/pipeline/forwarder.ts), `config show` prints them too. Sources: no sink enabled, secrets written inline,
 * each sink type's own warnings (SinkFactory.warnings: a retired Teams connector URL, an unsigned webhook, an exec
 * command this machine cannot find), approval hook commands this machine cannot find, and approval rules that can release
 * VMs whose preparation this forwarder cannot see (src/approval/warnings.ts). A check that depends
 * on the machine it runs on says so in its message.
 */
import { multiVmApprovalWarnings } from '../approval/warnings.ts';
import { commandNotFoundReason } from '../platform.ts';
import { SINK_FACTORIES } from '../sinks/registry.ts';
import type { SinkFactory } from '../sinks/types.ts';
import { type Config, redactConfig } from './index.ts';

export interface ConfigWarning {
  /** Key path as written in the YAML (`sinks[1].url`, `approval.hooks.prepare[0].command`, `sinks`). */
  path: string;
  message: string;
}

/** Every warning for `config` (see the module comment), in configuration order. */
export function configWarnings(
  config: Config,
  factories: readonly SinkFactory[] = SINK_FACTORIES,
): ConfigWarning[] {
  const warnings: ConfigWarning[] = [];
  if (config.sinks.length === 0) {
    warnings.push({
      path: 'sinks',
      message:
        'no sinks configured: records are committed to the state directory but delivered nowhere (add a sink ' +
        'under sinks:, or --sink stdout / --sink file:PATH)',
    });
  } else if (config.sinks.every((s) => !s.enabled)) {
    warnings.push({
      path: 'sinks',
      message:
        'no sinks enabled (every sink has enabled: false): records are committed to the state directory but ' +
        'delivered nowhere',
    });
  }
  for (const path of redactConfig(config).inlineSecrets) {
    warnings.push({
      path,
      message: `${path} is an inline secret; prefer "\${ENV_VAR}", { env: NAME } or { file: PATH }`,
    });
  }
  config.sinks.forEach((sink, index) => {
    if (!sink.enabled) return;
    const factory = factories.find((f) => f.type === sink.type);
    for (const message of factory?.warnings?.(sink.name, sink.options) ?? []) {
      warnings.push({ path: `sinks[${index}]`, message });
    }
  });
  for (const phase of ['prepare', 'recover'] as const) {
    (config.approval?.hooks?.[phase] ?? []).forEach((hook, index) => {
      if (hook.command === undefined) return;
      const reason = commandNotFoundReason(hook.command);
      if (reason === undefined) return;
      const path = `approval.hooks.${phase}[${index}].command`;
      warnings.push({
        path,
        message:
          `${path} (hook ${hook.name}): ${reason}; the hook fails every time it runs until it is installed` +
          `${phase === 'prepare' ? ' (so no event it guards is approved early)' : ''}. Checked here only: run ` +
          '`config validate` on the VM that runs the forwarder.',
      });
    });
  }
  const { kubernetes } = config;
  warnings.push(
    ...multiVmApprovalWarnings(config.approval, kubernetes.enabled && kubernetes.clusterApproval.enabled),
  );
  return warnings;
}
