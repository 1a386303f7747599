/**
 * zod in English only. Every zod entry point (`zod`, `zod/mini`, `zod/v4/core`) re-exports all of its ~50
 * locales as a namespace (`export * as locales from "../locales/index.js"`); a bundler drops the unused ones
 * (zod declares itself free of side effects), but Node.js loads each as written: about 500 KB of source that
 * V8 keeps for the life of the process, measured at 1.05 MiB of anonymous memory on an idle `run` (the
 * footprint benchmark, docs/performance.md). The project uses zod's default English messages only (every
 * message a user sees is ours or English), so the entry point (main.ts) installs a resolve hook before any
 * zod module loads: zod's own import of its locale index resolves to a module exporting `en` alone.
 * Nothing else is touched; `z.locales.en` stays available, other locales are not. The bundled executable
 * needs no hook (esbuild leaves the unused locales out); test/integration/cli/startup-imports.test.ts checks
 * that `run` loads no other locale.
 */
import type { ResolveFnOutput, ResolveHookContext } from 'node:module';

const moduleApi = process.getBuiltinModule('node:module');

/** zod's (ESM) import of its locale index, from zod/v4/core, zod/v4/classic or zod/v4/mini. */
export function isZodLocaleIndexImport(specifier: string, parentURL: string | undefined): boolean {
  return (
    specifier === '../locales/index.js' &&
    parentURL !== undefined &&
    /\/node_modules\/zod\/v4\/(?:core|classic|mini)\/[^/]+\.js$/.test(parentURL)
  );
}

/** A module that exports zod's English locale only, as the locale index would. */
export function englishOnlyLocales(parentURL: string): string {
  const english = new URL('../locales/en.js', parentURL).href;
  return `data:text/javascript,export { default as en } from ${encodeURIComponent(JSON.stringify(english))};`;
}

let installed = false;

/** Installs the resolve hook (once; a Node.js without module.registerHooks keeps every locale). */
export function loadZodInEnglishOnly(): void {
  if (installed || typeof moduleApi.registerHooks !== 'function') return;
  installed = true;
  moduleApi.registerHooks({
    resolve(specifier: string, context: ResolveHookContext, next): ResolveFnOutput {
      if (isZodLocaleIndexImport(specifier, context.parentURL)) {
        return { url: englishOnlyLocales(context.parentURL as string), shortCircuit: true };
      }
      return next(specifier, context);
    },
  });
}
