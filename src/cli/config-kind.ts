/**
 * The forwarder and the fleet consumer read different YAML files. When a file given to one command is the other's
 * (every top-level key is the other's, some only the other's), the refusal says so and names the command that
 * checks it: `config validate` on a fleet file, `fleet validate` on a forwarder file. Only on the error path: it
 * loads both schemas.
 */
import { readConfigFile } from '../config/file.ts';
import { buildConfigSchema } from '../config/schema.ts';
import { fleetConfigSchema } from '../fleet/config.ts';

export type ConfigKind = 'forwarder' | 'fleet';

const COMMAND: Record<ConfigKind, string> = {
  forwarder: 'config validate',
  fleet: 'fleet validate',
};

/**
 * A hint line when `file` (given to the command for `expected`) is the other kind's configuration; undefined when
 * it is not, or cannot be read.
 */
export function configKindHint(file: string, expected: ConfigKind): string | undefined {
  let keys: string[];
  try {
    keys = Object.keys(readConfigFile(file));
  } catch {
    return undefined;
  }
  const known: Record<ConfigKind, Set<string>> = {
    forwarder: new Set(Object.keys(buildConfigSchema({ env: {} }).shape)),
    fleet: new Set(Object.keys(fleetConfigSchema(() => ({})).shape)),
  };
  const other: ConfigKind = expected === 'fleet' ? 'forwarder' : 'fleet';
  const onlyOther = keys.filter((k) => known[other].has(k) && !known[expected].has(k));
  if (onlyOther.length === 0 || !keys.every((k) => known[other].has(k))) return undefined;
  const what = other === 'fleet' ? 'a fleet consumer configuration' : 'a forwarder configuration';
  return (
    `hint: ${file} looks like ${what} (${onlyOther.join(', ')}): check it with ` +
    `\`scheduled-events-forwarder ${COMMAND[other]} ${file}\``
  );
}
