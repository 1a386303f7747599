/**
 * Files of this package that the program reads at run time (config/scenarios/*.yaml, config/demo.scenario.yaml):
 * from disk next to src/ or dist/ (the npm package), or, in the single executable (`npm run package`), from the
 * copies embedded in it. The executable's entry (scripts/package/sea-main.ts) registers the embedded files under
 * the global symbol below; every module there sees a package-relative virtual path as its import.meta location
 * (an esbuild plugin rewrites it), so `<that path>/config/...` is looked up here instead of on disk.
 */
import { isAbsolute, relative, sep } from 'node:path';

const { existsSync, readdirSync, readFileSync } = process.getBuiltinModule('node:fs');

export interface EmbeddedFiles {
  /** The virtual package root the bundle's import.meta locations point into. */
  readonly root: string;
  /** Package-relative paths ('/'-separated). */
  readonly keys: readonly string[];
  read(key: string): string;
}

export const EMBEDDED_FILES = Symbol.for('scheduled-events-forwarder.embeddedFiles');

function embedded(): EmbeddedFiles | undefined {
  return (globalThis as Record<symbol, unknown>)[EMBEDDED_FILES] as EmbeddedFiles | undefined;
}

function keyOf(files: EmbeddedFiles, path: string): string | undefined {
  const rel = relative(files.root, path);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) return undefined;
  return rel.split(sep).join('/');
}

/** Whether the file or directory exists (on disk, or embedded in the executable). */
export function packageFileExists(path: string): boolean {
  const files = embedded();
  const key = files && keyOf(files, path);
  if (files && key !== undefined) return files.keys.some((k) => k === key || k.startsWith(`${key}/`));
  return existsSync(path);
}

/** The file's text (UTF-8). */
export function readPackageFile(path: string): string {
  const files = embedded();
  const key = files && keyOf(files, path);
  if (files && key !== undefined) {
    if (!files.keys.includes(key)) throw new Error(`ENOENT: no such file embedded in the executable: ${key}`);
    return files.read(key);
  }
  return readFileSync(path, 'utf8');
}

/** The names in a directory. */
export function listPackageDir(path: string): string[] {
  const files = embedded();
  const key = files && keyOf(files, path);
  if (files && key !== undefined) {
    const names = new Set<string>();
    for (const k of files.keys)
      if (k.startsWith(`${key}/`)) names.add(k.slice(key.length + 1).split('/')[0]!);
    return [...names];
  }
  return readdirSync(path);
}
