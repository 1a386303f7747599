/**
 * Preload (`node --import`) that records every npm package a process resolves and writes them as one JSON line
 * ({"packages": [...], "modules": [...], "youngGeneration": {...}}) to the file in SEF_TEST_PACKAGES_FILE when
 * the process exits: `modules` are the project's own files (paths relative to the repository), and
 * `youngGeneration` the size of V8's new space when the `run` command module was resolved (`atRun`, i.e.
 * after main() chose the command) and at exit (`atExit`), and `zodLocales` the files of zod's locale folder it
 * loaded (src/cli/zod-locales.ts: English only). Used to check that start-up paths do not load
 * modules they do not need, and that `run` keeps the young generation from growing.
 */
import { writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { join } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { getHeapSpaceStatistics } from 'node:v8';

const REPO = pathToFileURL(join(import.meta.dirname, '..', '..')).href;
const packages = new Set();
const modules = new Set();
const zodLocales = new Set();
const newSpaceBytes = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size;
let atRun;
let max = 0;
new PerformanceObserver(() => {
  max = Math.max(max, newSpaceBytes() ?? 0);
}).observe({ entryTypes: ['gc'] });
registerHooks({
  resolve(specifier, context, next) {
    const result = next(specifier, context);
    const match = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(result.url);
    if (match) packages.add(match[1]);
    const locale = /\/node_modules\/zod\/v4\/locales\/([^/]+)$/.exec(result.url);
    if (locale) zodLocales.add(locale[1]);
    else if (result.url.startsWith(`${REPO}/`)) modules.add(result.url.slice(REPO.length + 1));
    if (atRun === undefined && /\/cli\/commands\/run\.[jt]s$/.test(result.url)) atRun = newSpaceBytes();
    return result;
  },
});
process.on('exit', () => {
  const file = process.env.SEF_TEST_PACKAGES_FILE;
  const atExit = newSpaceBytes();
  const youngGeneration = { atRun, max: Math.max(max, atExit ?? 0), atExit };
  if (file) {
    const result = {
      packages: [...packages].sort(),
      modules: [...modules].sort(),
      zodLocales: [...zodLocales].sort(),
      youngGeneration,
    };
    writeFileSync(file, `${JSON.stringify(result)}\n`);
  }
});
