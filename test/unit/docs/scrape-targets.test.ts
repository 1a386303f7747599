/**
 * docs/observability.md's Prometheus example scrapes each process where it serves /metrics: a forwarder on its
 * telemetry port, the fleet consumer on its dashboard port (it has no metrics port of its own).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfigForCli } from '../../../src/config/index.ts';
import { loadDashboardConfig } from '../../../src/fleet/config.ts';

const repo = join(import.meta.dirname, '..', '..', '..');

it('the scrape targets of the alert-rules example are the ports the forwarder and the fleet serve /metrics on', () => {
  const doc = readFileSync(join(repo, 'docs', 'observability.md'), 'utf8');
  const block = doc
    .split(/```yaml\n/)
    .slice(1)
    .map((part) => part.slice(0, part.indexOf('```')))
    .find((yaml) => yaml.includes('job_name: sef-fleet'));
  expect(block).toBeDefined();
  const jobs = (
    parse(block!) as {
      scrape_configs: Array<{ job_name: string; static_configs: Array<{ targets: string[] }> }>;
    }
  ).scrape_configs;
  const ports = (job: string) =>
    new Set(
      jobs
        .find((j) => j.job_name === job)!
        .static_configs.flatMap((c) => c.targets)
        .map((target) => Number(target.split(':').at(-1))),
    );
  expect(ports('sef')).toEqual(new Set([loadConfigForCli({ sink: ['stdout'] }).telemetry.listen.port]));
  expect(ports('sef-fleet')).toEqual(new Set([loadDashboardConfig({}).dashboard.port]));
});
