/** Configuration files for tests that run the real CLI. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Returns a function that writes `config` as a JSON config file into `dir` (YAML reads it) with a stateDir of its
 * own below `dir`, and returns the file's path: config-1.yaml with state-1, config-2.yaml with state-2, ...
 */
export function configFileWriter(dir: string): (config: Record<string, unknown>) => string {
  let counter = 0;
  return (config) => {
    const file = join(dir, `config-${++counter}.yaml`);
    writeFileSync(file, JSON.stringify({ stateDir: join(dir, `state-${counter}`), ...config }));
    return file;
  };
}
