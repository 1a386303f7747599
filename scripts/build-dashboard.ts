/**
 * `npm run build` (and so npm's `prepare`, before `npm pack` / `npm publish`): writes the dashboard's browser
 * assets, bundled from src/fleet/dashboard/web/, into dist/fleet/dashboard/web/, where the installed package's
 * dashboard reads them (src/fleet/dashboard/page.ts).
 */
import { join } from 'node:path';
import { writeDashboardAssets } from '../src/fleet/dashboard/web-build.ts';

await writeDashboardAssets(join(import.meta.dirname, '..', 'dist', 'fleet', 'dashboard', 'web'));
