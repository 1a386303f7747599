/**
 * Preload (`node --import`) that records every npm package a process resolves and writes them as one JSON line
 * ({"packages": [...]}) to the file in SEF_TEST_PACKAGES_FILE when the process exits. Used to check that start-up
 * paths do not load SDKs they do not need.
 */
import { writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const packages = new Set();
registerHooks({
  resolve(specifier, context, next) {
    const result = next(specifier, context);
    const match = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(result.url);
    if (match) packages.add(match[1]);
    return result;
  },
});
process.on('exit', () => {
  const file = process.env.SEF_TEST_PACKAGES_FILE;
  if (file) writeFileSync(file, `${JSON.stringify({ packages: [...packages].sort() })}\n`);
});
