/**
 * The dashboard's page, script and stylesheet as the server sends them. Their sources are real files in web/
 * (index.html, app.css, and TypeScript checked against the DOM library and the API's own types); the script is
 * bundled by esbuild (web-build.ts) into one classic script, so the page needs nothing but its own origin (the
 * CSP allows only 'self'; no CDN). Where they come from depends on how the program runs:
 *
 * - the single executable: built into the bundle by scripts/package/bundle.ts (`__SEF_DASHBOARD__`);
 * - the npm package (dist/): dist/fleet/dashboard/web/, written at build time (`npm run build`, run by npm's
 *   `prepare` before `npm pack` / `npm publish`);
 * - a clone (src/*.ts run by Node or vitest): bundled from web/ on first use with the esbuild dev dependency, so
 *   what is served is always the current source (no generated file to commit or to forget to rebuild).
 */
import { join } from 'node:path';
import { errorMessage } from '../../errors.ts';

const { readFileSync } = process.getBuiltinModule('node:fs');

export interface DashboardAssets {
  /** index.html */
  html: string;
  /** app.js: the bundled page script */
  js: string;
  /** app.css */
  css: string;
}

/** The built files' names, in web/ (sources) and in dist/fleet/dashboard/web/ (built). */
export const ASSET_FILES = { html: 'index.html', js: 'app.js', css: 'app.css' } as const;

/** Set by the release bundler (scripts/package/bundle.ts) in the single executable. */
declare const __SEF_DASHBOARD__: DashboardAssets | undefined;

let loading: Promise<DashboardAssets> | undefined;

/** The page's assets (loaded or built once per process; a failed build is retried on the next call). */
export function dashboardAssets(): Promise<DashboardAssets> {
  loading ??= load().catch((error: unknown) => {
    loading = undefined;
    throw error;
  });
  return loading;
}

async function load(): Promise<DashboardAssets> {
  if (typeof __SEF_DASHBOARD__ === 'object') return __SEF_DASHBOARD__;
  const dir = join(import.meta.dirname, 'web');
  if (!import.meta.filename.endsWith('.ts')) {
    const read = (name: string) => {
      try {
        return readFileSync(join(dir, name), 'utf8');
      } catch (error) {
        throw new Error(
          `the dashboard's ${name} is missing from ${dir}: this installation is incomplete (a package built ` +
            `without \`npm run build\`); reinstall the package (${errorMessage(error)})`,
        );
      }
    };
    return { html: read(ASSET_FILES.html), js: read(ASSET_FILES.js), css: read(ASSET_FILES.css) };
  }
  // From source: bundle now. Not a literal import, so that the release bundle never includes the bundler.
  const builder = new URL('./web-build.ts', import.meta.url).href;
  const { buildDashboardAssets } = (await import(builder)) as {
    buildDashboardAssets(): Promise<DashboardAssets>;
  };
  return buildDashboardAssets();
}
