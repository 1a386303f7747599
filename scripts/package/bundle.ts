/**
 * Bundles the CLI into one CommonJS file with esbuild: release/bundle/scheduled-events-forwarder.cjs.
 *
 * - CommonJS because a Node 24 single executable's main script must be CommonJS. esbuild turns every
 *   `await import('./x.ts')` into a lazily initialised module inside the file (`__esm` wrappers): the code is in
 *   the file but evaluated only when that import runs, so start-up still loads only what a command needs.
 * - Every src/ module's `import.meta.url|dirname|filename` is rewritten to a virtual path
 *   `<dir of the executable>/.scheduled-events-forwarder/<package-relative path>`, so code that finds package
 *   files relative to itself keeps working; src/package-files.ts serves those paths from the SEA assets.
 * - The dashboard's browser assets are built from src/fleet/dashboard/web/ (web-build.ts) into the bundle as
 *   `__SEF_DASHBOARD__` (read by src/fleet/dashboard/page.ts).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { build, type Plugin } from 'esbuild';
import { buildDashboardAssets } from '../../src/fleet/dashboard/web-build.ts';

const ROOT = join(import.meta.dirname, '..', '..');

const importMetaPlugin: Plugin = {
  name: 'virtual-import-meta',
  setup(b) {
    b.onLoad({ filter: /[\\/](src|scripts)[\\/].*\.ts$/ }, (args) => {
      const rel = relative(ROOT, args.path).split(sep).join('/');
      const relDir = dirname(rel);
      const path = (p: string) => `__sef_path.join(__sef_root, ${JSON.stringify(p)})`;
      const source = readFileSync(args.path, 'utf8');
      if (/=\s*createRequire\(import\.meta\.url\)\s*;/.test(source)) {
        // A require kept in a variable would not be bundled and fails in the executable ("Cannot find module").
        throw new Error(
          `${rel}: call createRequire(import.meta.url)('<package>') inline so the bundle can include the package`,
        );
      }
      const contents = source
        // A synchronous lazy load (`createRequire(import.meta.url)('yaml')`) becomes a plain require, which esbuild
        // bundles (evaluated when called, as before) instead of a look-up on a disk the executable does not have.
        .replace(/createRequire\(import\.meta\.url\)\(/g, 'require(')
        .replaceAll('import.meta.url', `__sef_url.pathToFileURL(${path(rel)}).href`)
        .replaceAll('import.meta.dirname', path(relDir))
        .replaceAll('import.meta.filename', path(rel));
      return { contents, loader: 'ts' };
    });
  },
};

/**
 * For the release tier's start-up test only: appends to every npm package module a line recording the package
 * in a global set when the module is evaluated, and writes the set to $SEF_TEST_PACKAGES_FILE at exit.
 */
/**
 * Resolve packages the way Node resolves them for a CommonJS program (the `require` export condition): ESM
 * builds of some dependencies (the OTLP gRPC exporter) call `createRequire(import.meta.url)` to load peers,
 * which has no meaning in a CommonJS bundle, while their CommonJS builds use plain `require` that esbuild
 * bundles.
 */
const preferRequirePlugin: Plugin = {
  name: 'prefer-require-condition',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.kind !== 'import-statement' && args.kind !== 'dynamic-import') return undefined;
      if (args.pluginData === 'prefer-require') return undefined;
      const result = await b.resolve(args.path, {
        kind: 'require-call',
        resolveDir: args.resolveDir,
        importer: args.importer,
        pluginData: 'prefer-require',
      });
      return result.errors.length > 0 ? undefined : result;
    });
  },
};

const recordPackagesPlugin: Plugin = {
  name: 'record-evaluated-packages',
  setup(b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/].*\.(js|cjs|mjs)$/ }, (args) => {
      const match = /.*[\\/]node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/.exec(args.path);
      const name = match![1]!.replace('\\', '/');
      const contents = `${readFileSync(args.path, 'utf8')}\n;(globalThis.__sefPackages ??= new Set()).add(${JSON.stringify(name)});\n`;
      return { contents, loader: 'js' };
    });
  },
};

const RECORD_PACKAGES_BANNER =
  'process.on("exit", () => { if (process.env.SEF_TEST_PACKAGES_FILE) require("node:fs").writeFileSync(' +
  'process.env.SEF_TEST_PACKAGES_FILE, JSON.stringify({ packages: [...(globalThis.__sefPackages ?? [])].sort() })); });';

/**
 * Heavy packages that only some commands or sinks use go into their own chunks (`chunks/<name>.cjs` next to the
 * bundle, SEA assets in the executable), compiled only when first required. A single bundle holding them all
 * would be parsed whole at start-up: V8 pre-parses every function of a script and keeps its source, which
 * measured about 20 MiB more resident memory for `run --sink stdout` than the unbundled package. The main
 * bundle (CLI, config, store, pipeline, simulator, zod, yaml, pino) stays about 1 MB.
 */
export const CHUNKS: ReadonlyArray<{ name: string; packages: RegExp }> = [
  { name: 'azure', packages: /^@azure\// },
  { name: 'otel', packages: /^(@opentelemetry\/|@grpc\/|protobufjs$)/ },
  { name: 'undici', packages: /^undici$/ },
  { name: 'mustache', packages: /^mustache$/ },
  { name: 'prom-client', packages: /^prom-client$/ },
  { name: 'pino-pretty', packages: /^pino-pretty$/ },
  { name: 'ajv', packages: /^ajv(-formats)?$/ },
  // node-postgres, for the fleet history in PostgreSQL (src/fleet/history/postgres-database.ts, itself imported
  // lazily). Its optional `require('pg-native')` sits in a try block, which esbuild leaves as a plain require:
  // the pure JavaScript client is what runs (pg-native is not a dependency).
  { name: 'postgres', packages: /^pg(-connection-string)?$/ },
  // The Kubernetes client, for the node agent (src/kubernetes/client.ts, itself imported lazily and only when
  // `kubernetes.enabled`): about 1.4 MB with its dependencies (openid-client, ws, js-yaml, its own undici), which
  // `run` without a `kubernetes` section must never parse.
  { name: 'kubernetes', packages: /^@kubernetes\// },
];

const packageOf = (specifier: string) =>
  specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!;

/** Makes every import of a chunk's package external, recording specifier → chunk. */
function chunkExternalsPlugin(seen: Map<string, string>): Plugin {
  return {
    name: 'chunk-externals',
    setup(b) {
      b.onResolve({ filter: /^[^./]/ }, (args) => {
        const chunk = CHUNKS.find((c) => c.packages.test(packageOf(args.path)));
        if (chunk === undefined) return undefined;
        seen.set(args.path, chunk.name);
        return { path: args.path, external: true };
      });
    },
  };
}

/**
 * The main bundle runs inside a function whose `require` resolves a chunk's specifiers from the chunk (loaded
 * and compiled on first use: from the SEA assets in the executable, else from chunks/ next to the bundle) and
 * everything else (Node's built-in modules) with the real `require`.
 */
function loaderBanner(chunkOf: Record<string, string>): string {
  return [
    `const __sef_chunk_of = ${JSON.stringify(chunkOf)}, __sef_chunks = {};`,
    'function __sef_load_chunk(name) {',
    '  const key = "chunks/" + name + ".cjs";',
    '  let code;',
    '  try { const sea = require("node:sea"); if (sea.isSea()) code = sea.getAsset(key, "utf8"); } catch {}',
    '  if (code === undefined) code = require("node:fs").readFileSync(__sef_path.join(__dirname, key), "utf8");',
    '  const module = { exports: {} };',
    '  require("node:vm").compileFunction(code, ["module", "exports", "require"], { filename: key })(module, module.exports, require);',
    '  return module.exports;',
    '}',
    'const __sef_require = (id) => {',
    '  const chunk = __sef_chunk_of[id];',
    '  if (chunk === undefined) return require(id);',
    '  __sef_chunks[chunk] ??= __sef_load_chunk(chunk);',
    '  return __sef_chunks[chunk][id];',
    '};',
    '(function (require) {',
  ].join('\n');
}

/** A chunk's entry: each specifier as a lazy property, so requiring one package evaluates only that one. */
function chunkEntry(specifiers: string[]): string {
  const lines = specifiers.map(
    (s) =>
      `Object.defineProperty(exports, ${JSON.stringify(s)}, { enumerable: true, get: () => require(${JSON.stringify(s)}) });`,
  );
  return lines.join('\n');
}

export interface BundleResult {
  /** The main bundle and the chunk files (chunks/<name>.cjs next to it). */
  outfile: string;
  chunks: Array<{ name: string; file: string; assetKey: string }>;
  /** Licence comments of everything bundled (esbuild's legalComments), concatenated. */
  legal: string;
}

export async function bundle(options: {
  outfile: string;
  version: string;
  assets: string[];
  /** Test builds: record which npm packages are evaluated (recordPackagesPlugin). */
  recordPackages?: boolean;
}): Promise<BundleResult> {
  const common = {
    bundle: true,
    platform: 'node',
    target: 'node24',
    format: 'cjs',
    minify: true,
    // Keep function and class names: errors, logs and some libraries read them.
    keepNames: true,
    legalComments: 'external',
    logLevel: 'warning',
    metafile: true,
    // `await import('pkg')` of a package in a chunk must become a require (answered by the chunk loader below):
    // a real import() would resolve the package on disk, where an executable has none (it only worked when a
    // node_modules happened to be above the file).
    supported: { 'dynamic-import': false },
  } as const;
  const seen = new Map<string, string>();
  const result = await build({
    ...common,
    entryPoints: [join(ROOT, 'scripts', 'package', 'sea-main.ts')],
    outfile: options.outfile,
    define: {
      __SEF_VERSION__: JSON.stringify(options.version),
      __SEF_ASSETS__: JSON.stringify(options.assets),
      // The dashboard's page, script and stylesheet (src/fleet/dashboard/page.ts), built from web/ now.
      __SEF_DASHBOARD__: JSON.stringify(await buildDashboardAssets()),
    },
    banner: { js: '' },
    plugins: options.recordPackages
      ? [chunkExternalsPlugin(seen), preferRequirePlugin, importMetaPlugin, recordPackagesPlugin]
      : [chunkExternalsPlugin(seen), preferRequirePlugin, importMetaPlugin],
  });
  if (result.errors.length > 0) throw new Error('esbuild failed');
  // Wrap the main bundle in the chunk loader (esbuild's banner/footer cannot see the externals it found).
  const main = readFileSync(options.outfile, 'utf8');
  const prologue = [
    '"use strict";',
    'const __sef_path = require("node:path"), __sef_url = require("node:url");',
    'const __sef_root = __sef_path.join(__sef_path.dirname(process.execPath), ".scheduled-events-forwarder");',
    ...(options.recordPackages ? [RECORD_PACKAGES_BANNER] : []),
    loaderBanner(Object.fromEntries(seen)),
  ].join('\n');
  writeFileSync(options.outfile, `${prologue}\n${main}\n})(__sef_require);\n`);

  const legal = [readIfExists(`${options.outfile}.LEGAL.txt`)];
  const chunks: BundleResult['chunks'] = [];
  for (const chunk of CHUNKS) {
    const specifiers = [...seen].filter(([, c]) => c === chunk.name).map(([s]) => s);
    if (specifiers.length === 0) continue;
    const file = join(dirname(options.outfile), 'chunks', `${chunk.name}.cjs`);
    const built = await build({
      ...common,
      stdin: {
        contents: chunkEntry(specifiers),
        resolveDir: ROOT,
        sourcefile: `chunk-${chunk.name}.js`,
        loader: 'js',
      },
      outfile: file,
      plugins: options.recordPackages ? [preferRequirePlugin, recordPackagesPlugin] : [preferRequirePlugin],
    });
    if (built.errors.length > 0) throw new Error(`esbuild failed for chunk ${chunk.name}`);
    legal.push(readIfExists(`${file}.LEGAL.txt`));
    chunks.push({ name: chunk.name, file, assetKey: `chunks/${chunk.name}.cjs` });
  }
  return { outfile: options.outfile, chunks, legal: legal.filter((l) => l !== '').join('\n') };
}

function readIfExists(file: string): string {
  return existsSync(file) ? readFileSync(file, 'utf8') : '';
}
