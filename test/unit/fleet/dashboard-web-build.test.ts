/**
 * The dashboard's browser assets built from src/fleet/dashboard/web/ (web-build.ts): one classic script for a
 * page whose CSP allows only 'self', and a build that refuses browser code pulling in anything from outside
 * web/ (only the server's types may be imported, and those are erased).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildDashboardAssets } from '../../../src/fleet/dashboard/web-build.ts';
import { makeTempDir } from '../../support/tmp.ts';

const tmp = makeTempDir('sef-web-build-');
afterAll(() => tmp.cleanup());

describe('dashboard web build', () => {
  it('bundles the page script into one classic script with no module syntax, next to the page and stylesheet', async () => {
    const { html, js, css } = await buildDashboardAssets();
    expect(js.startsWith('"use strict";\n(() => {')).toBe(true);
    expect(js.trimEnd().endsWith('})();')).toBe(true);
    expect(js).not.toMatch(/^\s*(import|export)\s/m);
    expect(js).not.toMatch(/\brequire\(/);
    // The page loads only its own script and stylesheet; nothing inline, nothing from another origin.
    expect(html).toContain('<script src="/assets/app.js"></script>');
    expect(html).toContain('<link rel="stylesheet" href="/assets/app.css">');
    expect(html).not.toMatch(/<script>|<style|\sstyle="|\son[a-z]+="|https?:\/\//);
    expect(css).toContain('.card');
  });

  it('bundles the one shared module, src/errors.ts: the page turns errors into text as the server does', async () => {
    const { js } = await buildDashboardAssets();
    expect(js).toContain('was thrown'); // errorMessage's text for a thrown null or undefined
    expect(js).not.toContain('UsageError'); // the rest of errors.ts is left out
  });

  it('refuses browser code that imports a module from outside web/, naming it', async () => {
    const web = join(tmp.dir, 'web');
    mkdirSync(web);
    writeFileSync(join(tmp.dir, 'server-code.ts'), 'export const secret = 1;\n');
    writeFileSync(
      join(web, 'app.ts'),
      "import type { Unused } from './types.ts';\nimport { secret } from '../server-code.ts';\nconsole.log(secret as unknown as Unused);\n",
    );
    writeFileSync(join(web, 'types.ts'), 'export type Unused = number;\n');
    writeFileSync(join(web, 'index.html'), '<!doctype html>\n');
    writeFileSync(join(web, 'app.css'), '\n');
    await expect(buildDashboardAssets(web)).rejects.toThrow(
      "the dashboard's browser code may import only web/ files (and types): it bundles ../server-code.ts",
    );
  });
});
