/**
 * Debian's headless Chromium for the browser tier (test/browser): where it is, why a test cannot run without it,
 * and one way to launch it on a fresh profile.
 */
import { existsSync } from 'node:fs';
import { type BrowserContext, chromium } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/** Why the browser tests cannot run here, or undefined when Chromium is installed. */
export const chromiumMissing = existsSync(CHROMIUM)
  ? undefined
  : `${CHROMIUM} is missing: the dashboard browser test needs Debian's chromium ` +
    '(as root: apt-get update && apt-get install -y chromium)';

/**
 * Headless Chromium with the profile directory `profileDir` (playwright passes it as --user-data-dir), a
 * 1400×1000 viewport, and no background traffic of its own (updates, sync, first-run pages).
 */
export function launchChromium(
  profileDir: string,
  options: { acceptDownloads?: boolean } = {},
): Promise<BrowserContext> {
  return chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    acceptDownloads: options.acceptDownloads ?? false,
    viewport: { width: 1400, height: 1000 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}
