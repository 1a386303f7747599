/**
 * The Node.js check the CLI runs before anything else: the store needs node:sqlite without a flag, which Node.js
 * has from 22.13 (and 23.4 on the 23 line). Older versions would die later with `No such built-in module:
 * node:sqlite`; this names the version needed instead. Keep in step with package.json `engines`.
 */
export const REQUIRED_NODE = '22.13';

/** A one-line problem when `version` (e.g. process.versions.node) is too old, else undefined. */
export function nodeVersionProblem(version: string, execPath = ''): string | undefined {
  const [major = 0, minor = 0] = version.split('.').map((part) => Number.parseInt(part, 10));
  const ok = major > 23 || (major === 23 && minor >= 4) || (major === 22 && minor >= 13);
  if (ok) return undefined;
  return (
    `scheduled-events-forwarder needs Node.js ${REQUIRED_NODE} or newer (it uses node:sqlite; Node.js 24 LTS is ` +
    `recommended), but runs on Node.js v${version}${execPath === '' ? '' : ` (${execPath})`}. Install a newer ` +
    'Node.js, or start the CLI with one (e.g. /path/to/node24/bin/node …/dist/cli/main.js).'
  );
}
