/**
 * Entry of the bundled CLI (release/bundle/scheduled-events-forwarder.cjs) and of the single executable built
 * from it. esbuild bundles this file with src/cli/main.ts into one CommonJS file (a SEA main script must be
 * CommonJS on Node 24); every `await import(...)` in src/ stays a lazily evaluated module inside it, and the
 * heavy packages (Azure SDK, OpenTelemetry, undici, prom-client...) are separate chunks compiled on first use
 * (scripts/package/bundle.ts), so `--version` and `run --sink stdout` neither evaluate nor parse them.
 *
 * Before the CLI starts it registers, under global symbols (read by src/package-files.ts and src/log.ts):
 * - the package files embedded as SEA assets (scenarios, the demo scenario, the example config), and
 * - pino-pretty as a synchronous stream (pino's transport worker loads a file, which an executable lacks).
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { main } from '../../src/cli/main.ts';
import { EMBEDDED_FILES, type EmbeddedFiles } from '../../src/package-files.ts';

/** The package-relative paths embedded as SEA assets (set by scripts/package/bundle.ts). */
declare const __SEF_ASSETS__: string[];
/** src/log.ts PRETTY_STREAM (not imported: log.ts loads pino, which `--version` must not pay for). */
const PRETTY_STREAM = Symbol.for('scheduled-events-forwarder.prettyStream');

const nodeRequire = createRequire(__filename);

function isSea(): boolean {
  try {
    return (nodeRequire('node:sea') as { isSea(): boolean }).isSea();
  } catch {
    return false;
  }
}

if (isSea()) {
  const sea = nodeRequire('node:sea') as { getAsset(key: string, encoding: string): string };
  const files: EmbeddedFiles = {
    // The bundler points import.meta of every module at <virtual root>/<package-relative path>.
    root: join(import.meta.dirname, '..', '..'),
    keys: __SEF_ASSETS__,
    read: (key) => sea.getAsset(key, 'utf8'),
  };
  (globalThis as Record<symbol, unknown>)[EMBEDDED_FILES] = files;
}

(globalThis as Record<symbol, unknown>)[PRETTY_STREAM] = (options: Record<string, unknown>) => {
  // A literal require: esbuild bundles pino-pretty here, evaluated only when a terminal asks for pretty logs.
  const pretty = require('pino-pretty') as (opts: Record<string, unknown>) => unknown;
  return pretty(options);
};

void main(process.argv).then((code) => {
  process.exitCode = code;
});
