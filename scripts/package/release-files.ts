/** What goes into the release beside the executable: embedded package files, Node flags, systemd units. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './node-binaries.ts';

/**
 * Package files the executable embeds as SEA assets (package-relative, '/'-separated), served to the program by
 * src/package-files.ts: the simulator's scenarios and the demo's, and the example configurations.
 */
export const EMBEDDED_ASSETS: string[] = [
  'config/demo.scenario.yaml',
  'config/forwarder.example.yaml',
  'config/approval.example.yaml',
  ...readdirSync(join(ROOT, 'config', 'scenarios'))
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => `config/scenarios/${f}`),
];

/**
 * Node.js flags built into the executable (sea-config `execArgv`). Empty: the CLI's own entry sizes the heap
 * where it needs to, so the executable and `node dist/cli/main.js` start the same way.
 */
export const SEA_EXEC_ARGV: string[] = [];

export const UNIT_USER = '_scheduled-events-forwarder';

/**
 * The systemd unit for the executable, derived from packaging/systemd/scheduled-events-forwarder.service (the
 * npm-package unit, whose hardening it keeps): ExecStart runs `<binDir>/scheduled-events-forwarder`; identity is
 * systemd's DynamicUser (tarball) or the system user the Debian package's postinst creates.
 */
export function systemdUnit(binDir: string, identity: 'dynamic' | 'system-user'): string {
  let unit = readFileSync(join(ROOT, 'packaging', 'systemd', 'scheduled-events-forwarder.service'), 'utf8');
  const exec = `ExecStart=${binDir}/scheduled-events-forwarder run --config /etc/scheduled-events-forwarder/forwarder.yaml`;
  if (!/^ExecStart=.*$/m.test(unit)) throw new Error('packaging/systemd unit has no ExecStart line');
  unit = unit.replace(/^ExecStart=.*$/m, exec);
  unit = unit.replace(
    /^# Installed by packaging\/linux\/install\.sh.*$/m,
    identity === 'dynamic'
      ? "# The release archive's unit: installed by its install.sh to /etc/systemd/system/. Logs go to journald:"
      : "# The Debian package's unit (/lib/systemd/system). Logs go to journald:",
  );
  if (identity === 'system-user') {
    if (!/^DynamicUser=yes$/m.test(unit))
      throw new Error('packaging/systemd unit has no DynamicUser=yes line');
    unit = unit
      .replace(
        /^# Identity and state: a dynamic, unprivileged user;/m,
        '# Identity and state: the system user the package creates;',
      )
      .replace(/^DynamicUser=yes$/m, `User=${UNIT_USER}\nGroup=${UNIT_USER}`);
  }
  return unit;
}
