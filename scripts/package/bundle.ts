/**
 * Bundles the CLI into one CommonJS file with esbuild: release/bundle/scheduled-events-forwarder.cjs.
 *
 * - CommonJS because a Node 24 single executable's main script must be CommonJS. esbuild turns every
 *   `await import('./x.ts')` into a lazily initialised module inside the file (`__esm` wrappers): the code is in
 *   the file but evaluated only when that import runs, so start-up still loads only what a command needs.
 * - Every src/ module's `import.meta.url|dirname|filename` is rewritten to a virtual path
 *   `<dir of the executable>/.scheduled-events-forwarder/<package-relative path>`, so code that finds package
 *   files relative to itself keeps working; src/package-files.ts serves those paths from the SEA assets.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { build, type Plugin } from 'esbuild';

const ROOT = join(import.meta.dirname, '..', '..');

const importMetaPlugin: Plugin = {
  name: 'virtual-import-meta',
  setup(b) {
    b.onLoad({ filter: /[\\/](src|scripts)[\\/].*\.ts$/ }, (args) => {
      const rel = relative(ROOT, args.path).split(sep).join('/');
      const relDir = dirname(rel);
      const path = (p: string) => `__sef_path.join(__sef_root, ${JSON.stringify(p)})`;
      const contents = readFileSync(args.path, 'utf8')
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

export async function bundle(options: {
  outfile: string;
  version: string;
  assets: string[];
  /** Test builds: record which npm packages are evaluated (recordPackagesPlugin). */
  recordPackages?: boolean;
}): Promise<void> {
  const result = await build({
    entryPoints: [join(ROOT, 'scripts', 'package', 'sea-main.ts')],
    outfile: options.outfile,
    bundle: true,
    platform: 'node',
    target: 'node24',
    format: 'cjs',
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'external',
    logLevel: 'warning',
    define: {
      __SEF_VERSION__: JSON.stringify(options.version),
      __SEF_ASSETS__: JSON.stringify(options.assets),
    },
    banner: {
      js: [
        '"use strict";',
        'const __sef_path = require("node:path"), __sef_url = require("node:url");',
        'const __sef_root = __sef_path.join(__sef_path.dirname(process.execPath), ".scheduled-events-forwarder");',
        ...(options.recordPackages ? [RECORD_PACKAGES_BANNER] : []),
      ].join('\n'),
    },
    plugins: options.recordPackages
      ? [preferRequirePlugin, importMetaPlugin, recordPackagesPlugin]
      : [preferRequirePlugin, importMetaPlugin],
    metafile: true,
  });
  if (result.errors.length > 0) throw new Error('esbuild failed');
}
