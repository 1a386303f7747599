/**
 * The dashboard's page, script and stylesheet as a running dashboard serves them, checked against a fresh build
 * of src/fleet/dashboard/web/ (web-build.ts): the npm package and the single executable ship what the source
 * builds, with the page's security headers.
 */
import { expect } from 'vitest';
import type { DashboardAssets } from '../../src/fleet/dashboard/page.ts';
import { buildDashboardAssets } from '../../src/fleet/dashboard/web-build.ts';

const PATHS: Array<[path: string, asset: keyof DashboardAssets, type: string]> = [
  ['/', 'html', 'text/html; charset=utf-8'],
  ['/assets/app.js', 'js', 'text/javascript; charset=utf-8'],
  ['/assets/app.css', 'css', 'text/css; charset=utf-8'],
];

export async function expectDashboardAssets(baseUrl: string): Promise<void> {
  const built = await buildDashboardAssets();
  for (const [path, asset, type] of PATHS) {
    const res = await fetch(new URL(path, baseUrl));
    expect(res.status, path).toBe(200);
    expect(res.headers.get('content-type'), path).toBe(type);
    expect(res.headers.get('content-security-policy'), path).toContain("script-src 'self'");
    expect(await res.text(), path).toBe(built[asset]);
  }
}
