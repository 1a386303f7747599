/**
 * Builds scheduled-events-forwarder_<version>_<arch>.deb with dpkg-deb from the executable and packaging/debian:
 *   /usr/bin/scheduled-events-forwarder                     the single executable
 *   /lib/systemd/system/scheduled-events-forwarder.service  the hardened unit, as the system user
 *   /etc/scheduled-events-forwarder/forwarder.yaml          the commented example config (a conffile)
 *   /usr/share/doc/scheduled-events-forwarder/              copyright, changelog, licenses
 *   /usr/share/scheduled-events-forwarder/prometheus/       the Prometheus alert rules and their promtool tests
 *   DEBIAN/postinst|prerm|postrm                            user, state directory, systemd (packaging/debian)
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { ROOT } from './node-binaries.ts';
import { systemdUnit } from './release-files.ts';
import { NAME } from './targets.ts';

export const MAINTAINER =
  'scheduled-events-forwarder maintainers <scheduled-events-forwarder@users.noreply.github.com>';

/** The example config with its ./state paths pointed at the package's state directory. */
export function debianConfig(example: string): string {
  return example
    .replace(/^stateDir: \.\/state$/m, `stateDir: /var/lib/${NAME}`)
    .replaceAll('./state/', `/var/lib/${NAME}/`);
}

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? walk(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}

export async function buildDeb(options: {
  out: string;
  work: string;
  arch: 'amd64' | 'arm64';
  version: string;
  executable: string;
  nodeLicense: Buffer;
  notices: Buffer;
}): Promise<void> {
  const root = options.work;
  rmSync(root, { recursive: true, force: true });
  const path = (...parts: string[]) => {
    const file = join(root, ...parts);
    mkdirSync(join(file, '..'), { recursive: true });
    return file;
  };
  const doc = ['usr', 'share', 'doc', NAME];

  copyFileSync(options.executable, path('usr', 'bin', NAME));
  chmodSync(path('usr', 'bin', NAME), 0o755);
  writeFileSync(path('lib', 'systemd', 'system', `${NAME}.service`), systemdUnit('/usr/bin', 'system-user'));
  const example = readFileSync(join(ROOT, 'config', 'forwarder.example.yaml'), 'utf8');
  writeFileSync(path('etc', NAME, 'forwarder.yaml'), debianConfig(example));
  copyFileSync(join(ROOT, 'packaging', 'debian', 'copyright'), path(...doc, 'copyright'));
  writeFileSync(path(...doc, 'LICENSE.node'), options.nodeLicense);
  writeFileSync(path(...doc, 'THIRD-PARTY-NOTICES'), options.notices);
  const date = new Date().toUTCString().replace('GMT', '+0000');
  const changelog =
    `${NAME} (${options.version}) unstable; urgency=medium\n\n` +
    `  * Release ${options.version}: see the project's documentation for what changed.\n\n` +
    ` -- ${MAINTAINER}  ${date}\n`;
  writeFileSync(path(...doc, 'changelog.gz'), gzipSync(changelog, { level: 9 }));
  // The alert rules (docs/observability.md#alert-rules) with their unit tests, which name the rules file relatively.
  for (const file of ['sef-alerts.rules.yml', 'sef-alerts.test.yml']) {
    copyFileSync(join(ROOT, 'packaging', 'prometheus', file), path('usr', 'share', NAME, 'prometheus', file));
  }
  copyFileSync(
    join(ROOT, 'packaging', 'debian', 'lintian-overrides'),
    path('usr', 'share', 'lintian', 'overrides', NAME),
  );

  const payload = walk(root);
  for (const file of payload) if (!file.endsWith(`/usr/bin/${NAME}`)) chmodSync(file, 0o644);
  const installedKiB = Math.ceil(payload.reduce((n, f) => n + statSync(f).size, 0) / 1024);

  const control = [
    `Package: ${NAME}`,
    `Version: ${options.version}`,
    `Architecture: ${options.arch}`,
    `Maintainer: ${MAINTAINER}`,
    `Installed-Size: ${installedKiB}`,
    // The Node.js binary's needs (objdump -T: GLIBC_2.28, GLIBCXX_3.4.21, GCC_3.4); adduser and
    // init-system-helpers for the maintainer scripts.
    'Depends: libc6 (>= 2.28), libgcc-s1 (>= 3.4), libstdc++6 (>= 5.2), adduser, init-system-helpers (>= 1.52)',
    'Section: admin',
    'Priority: optional',
    'Homepage: https://www.npmjs.com/package/scheduled-events-forwarder',
    'Description: Azure Scheduled Events forwarder (IMDS to durable CloudEvents)',
    ' A sidecar for Azure VMs: it polls the Instance Metadata Service for Scheduled',
    ' Events, turns every change into a CloudEvents lifecycle record, commits it to',
    ' a durable local outbox and delivers it at least once to Event Hubs, webhooks',
    ' (Slack, Teams, signed), OpenTelemetry logs, files or commands.',
    ' .',
    ' One self-contained executable (Node.js is built in). The service is installed',
    ' but not started: configure /etc/scheduled-events-forwarder/forwarder.yaml',
    ' first, then run: systemctl enable --now scheduled-events-forwarder',
    '',
  ].join('\n');
  writeFileSync(path('DEBIAN', 'control'), control);
  writeFileSync(path('DEBIAN', 'conffiles'), `/etc/${NAME}/forwarder.yaml\n`);
  writeFileSync(
    path('DEBIAN', 'md5sums'),
    payload
      .map((f) => `${createHash('md5').update(readFileSync(f)).digest('hex')}  ${relative(root, f)}\n`)
      .filter((line) => !line.includes(' etc/'))
      .join(''),
  );
  for (const script of ['postinst', 'prerm', 'postrm']) {
    copyFileSync(join(ROOT, 'packaging', 'debian', script), path('DEBIAN', script));
    chmodSync(path('DEBIAN', script), 0o755);
  }
  chmodSync(path('DEBIAN', 'control'), 0o644);
  chmodSync(path('DEBIAN', 'conffiles'), 0o644);
  chmodSync(path('DEBIAN', 'md5sums'), 0o644);
  rmSync(options.out, { force: true });
  await promisify(execFile)(
    'dpkg-deb',
    ['--root-owner-group', '-Zgzip', '-z6', '--build', root, options.out],
    {
      maxBuffer: 16 * 1024 * 1024,
    },
  );
  rmSync(root, { recursive: true, force: true });
}
