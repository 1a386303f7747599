const { readFileSync } = process.getBuiltinModule('node:fs');

/** Set by the bundler (scripts/package/bundle.ts) in the bundled CLI and the single executable. */
declare const __SEF_VERSION__: string | undefined;

/** The package version: built into the bundle, else read from package.json next to src/ or dist/. */
export function readVersion(): string {
  if (typeof __SEF_VERSION__ === 'string') return __SEF_VERSION__;
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}
