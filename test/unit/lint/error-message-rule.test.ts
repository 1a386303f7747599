/**
 * The lint rule that keeps one way to turn an unknown error into text (scripts/lint/error-message.grit, a Biome
 * plugin in biome.json, run by `npm run lint`) is sighted: every form it exists to refuse, planted in a file of a
 * `src` folder, is reported once at its own line, and what is allowed (errorMessage itself, src/errors.ts, String
 * of a value that is not an error, a file outside src) is not. A rule that could not see would pass vacuously.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir } from '../../support/tmp.ts';

const repo = join(import.meta.dirname, '..', '..', '..');
const biome = join(repo, 'node_modules', '@biomejs', 'biome', 'bin', 'biome');

/** Each line ending in `// refused` must be reported by the plugin, and no other line. */
const PLANTED = `import { errorMessage } from './errors.ts';

export function asError(error: unknown): string {
  return (error as Error).message; // refused
}
export function asErrno(error: unknown): string {
  return (error as NodeJS.ErrnoException).message; // refused
}
export function inline(error: unknown): string {
  return error instanceof Error ? error.message : String(error); // refused
}
export function inlineDefault(err: unknown): string {
  return err instanceof Error ? err.message : 'stopped'; // refused
}
export function caughtString(run: () => void): string {
  try {
    run();
    return '';
  } catch (e) {
    return String(e); // refused
  }
}
export function caughtTemplate(run: () => void): string {
  try {
    run();
    return '';
  } catch (error) {
    return \`failed: \${error}\`; // refused
  } finally {
    run();
  }
}
export const arrow = (x: number, cause: unknown): string => \`\${x} because \${cause}\`; // refused
export class Reporter {
  describe(reason: unknown): string {
    return String(reason); // refused
  }
}
export function promised(p: Promise<string>): Promise<string> {
  return p.catch((failure) => \`failed: \${failure}\`); // refused
}

export function allowed(error: unknown, count: number, value: unknown, name: string): string {
  return \`\${errorMessage(error)} \${String(count)} \${String(value)} \${name}\`;
}
export function allowedCatch(run: () => void): string {
  try {
    run();
    return '';
  } catch (error) {
    return errorMessage(error);
  }
}
`;

/** The helper itself may use the forms it replaces. */
const HELPER = `export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
`;

interface BiomeJson {
  summary: { changed: number; unchanged: number };
  diagnostics: Array<{
    category: string;
    message: string;
    location: { path: string; start: { line: number } };
  }>;
}

let dir: string;
let cleanup: () => void;
let plugin: BiomeJson['diagnostics'];
let filesChecked: number;

beforeAll(() => {
  ({ dir, cleanup } = makeTempDir('sef-lint-'));
  mkdirSync(join(dir, 'src'));
  mkdirSync(join(dir, 'test'));
  writeFileSync(join(dir, 'src', 'planted.ts'), PLANTED);
  writeFileSync(join(dir, 'src', 'errors.ts'), HELPER);
  writeFileSync(join(dir, 'test', 'outside.ts'), PLANTED.replace("'./errors.ts'", "'../src/errors.ts'"));
  // `biome lint` with the project's biome.json, as `npm run lint` runs it, on the planted tree.
  const run = spawnSync(
    process.execPath,
    [biome, 'lint', `--config-path=${repo}`, '--reporter=json', '--max-diagnostics=none', '.'],
    {
      cwd: dir,
      encoding: 'utf8',
      timeout: 60_000,
    },
  );
  if (run.stdout.trim() === '') throw new Error(`biome printed nothing (exit ${run.status}): ${run.stderr}`);
  const result = JSON.parse(run.stdout) as BiomeJson;
  plugin = result.diagnostics.filter((d) => d.category === 'plugin');
  filesChecked = result.summary.changed + result.summary.unchanged;
});

afterAll(() => cleanup?.());

describe('lint rule: one way to turn an unknown error into text', () => {
  it('reports every planted form once, at its line, naming the helper', () => {
    const refused = PLANTED.split('\n').flatMap((line, i) => (line.endsWith('// refused') ? [i + 1] : []));
    expect(refused).toHaveLength(9);
    const reported = plugin.filter((d) => d.location.path.endsWith('src/planted.ts'));
    expect(reported.map((d) => d.location.start.line).sort((a, b) => a - b)).toEqual(refused);
    for (const d of reported) expect(d.message).toContain('errorMessage(error) from src/errors.ts');
  });

  it('leaves src/errors.ts and files outside src alone', () => {
    expect(filesChecked).toBe(3); // all three were linted, so their silence counts
    expect(plugin.filter((d) => !d.location.path.endsWith('src/planted.ts'))).toEqual([]);
  });
});
