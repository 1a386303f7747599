/**
 * Whether two loaded configuration values are the same setting (a reload compares the running configuration with
 * the file read again: src/pipeline/reload-plan.ts). Secrets compare by value, so a rotated secret file or
 * variable is a change, and never appear in what this returns; lists compare in order; mappings by key, a key
 * whose value is undefined counting as absent.
 */
import { Secret } from '../secret.ts';

export function sameSetting(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a instanceof Secret || b instanceof Secret) {
    return (
      a instanceof Secret &&
      b instanceof Secret &&
      a.missing === undefined &&
      b.missing === undefined &&
      a.reveal() === b.reveal()
    );
  }
  if (a instanceof URL || b instanceof URL) return a instanceof URL && b instanceof URL && a.href === b.href;
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) &&
      Array.isArray(b) &&
      a.length === b.length &&
      a.every((item, index) => sameSetting(item, b[index]))
    );
  }
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  const keys = (o: object) => Object.keys(o).filter((k) => (o as Record<string, unknown>)[k] !== undefined);
  const ka = keys(a);
  const kb = new Set(keys(b));
  return (
    ka.length === kb.size &&
    ka.every(
      (k) => kb.has(k) && sameSetting((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]),
    )
  );
}
