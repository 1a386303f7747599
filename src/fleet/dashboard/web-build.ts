/**
 * Builds the dashboard's browser assets from web/ with esbuild (a dev dependency): app.ts and its modules into
 * one classic script (an IIFE: the page loads it with a plain `<script src>`), index.html and app.css as they
 * are. Used by page.ts when the program runs from source, by scripts/build-dashboard.ts for the npm package
 * (`npm run build`) and by scripts/package/bundle.ts for the single executable. Never loaded by the installed
 * package or the executable.
 */
import { isAbsolute, join, resolve } from 'node:path';
import { ASSET_FILES, type DashboardAssets } from './page.ts';

const { mkdirSync, readFileSync, writeFileSync } = process.getBuiltinModule('node:fs');

/** The browser code's sources (index.html, app.css, app.ts and its modules; tsconfig.json checks them). */
export const WEB_DIR = join(import.meta.dirname, 'web');

/**
 * The one module of the server's the page bundles: the one way to turn an error into text (errorMessage). It is
 * dependency-free and held to the page's rules (biome.json applies web/'s overrides to it: no Node.js modules or
 * globals).
 */
const SHARED_WITH_PAGE = [join(import.meta.dirname, '..', '..', 'errors.ts')];

/** The assets built from webDir (web/; tests pass another). */
export async function buildDashboardAssets(webDir = WEB_DIR): Promise<DashboardAssets> {
  const { build } = await import('esbuild');
  const result = await build({
    absWorkingDir: webDir,
    entryPoints: ['app.ts'],
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    // The browsers of the last few years (the page uses modern DOM APIs, not syntax that needs lowering).
    target: ['chrome100', 'firefox100', 'safari15', 'edge100'],
    charset: 'utf8',
    legalComments: 'none',
    logLevel: 'silent',
    metafile: true,
  });
  // Type-only imports of the server's API types are erased; anything else from outside web/ (but the shared
  // module) would put server code into the page.
  const outside = Object.keys(result.metafile.inputs).filter(
    (input) =>
      (input.startsWith('..') || isAbsolute(input)) && !SHARED_WITH_PAGE.includes(resolve(webDir, input)),
  );
  if (outside.length > 0)
    throw new Error(
      `the dashboard's browser code may import only web/ files (and types): it bundles ${outside.join(', ')}`,
    );
  const js = result.outputFiles[0]?.text;
  if (js === undefined) throw new Error('esbuild wrote no dashboard script');
  const read = (name: string) => readFileSync(join(webDir, name), 'utf8');
  return { html: read(ASSET_FILES.html), js, css: read(ASSET_FILES.css) };
}

/** Writes the built assets into dir (dist/fleet/dashboard/web/ for the npm package). */
export async function writeDashboardAssets(dir: string): Promise<void> {
  const assets = await buildDashboardAssets();
  mkdirSync(dir, { recursive: true });
  for (const key of ['html', 'js', 'css'] as const) writeFileSync(join(dir, ASSET_FILES[key]), assets[key]);
}
