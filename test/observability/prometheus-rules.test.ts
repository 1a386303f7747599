/**
 * The shipped alert rules (packaging/prometheus/sef-alerts.rules.yml) with the real promtool (Debian package
 * `prometheus`): `promtool check rules` accepts them, `promtool test rules` passes their unit tests
 * (sef-alerts.test.yml), every rule has a severity, a summary, a description and a runbook anchor that exists in
 * docs/observability.md, every rule has a unit test that fires and one that does not, and the forwarder rules
 * use only metrics the forwarder exports.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createMetrics } from '../../src/telemetry/index.ts';
import { REPO } from '../support/child.ts';
import { promtool, RULE_TESTS, RULES } from './prometheus.ts';

interface Rule {
  alert: string;
  expr: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const groups = (parse(readFileSync(RULES, 'utf8')) as { groups: Array<{ name: string; rules: Rule[] }> })
  .groups;
const rules = groups.flatMap((g) => g.rules);

/** The fleet metrics the rules may use: the contract with the fleet process (docs/observability.md). */
const FLEET_METRICS = [
  'sef_fleet_partition_lag_seconds',
  'sef_fleet_partition_events_behind',
  'sef_fleet_records_total',
  'sef_fleet_commit_failures_total',
  'sef_fleet_owned_partitions',
  'sef_fleet_pending_events',
  'sef_fleet_pending_vms',
  'sef_fleet_affected_vms_pending',
  'sef_fleet_blast_radius_threshold',
  'sef_fleet_lapsed_events',
  'sef_fleet_last_record_age_seconds',
  'sef_fleet_forwarders',
];

const metricNames = (expr: string): string[] => [...new Set(expr.match(/\bsef_[a-z0-9_]+/g) ?? [])];

describe('packaging/prometheus/sef-alerts.rules.yml', () => {
  it('passes promtool check rules', () => {
    const result = promtool(['check', 'rules', RULES]);
    expect(result.output).toContain(`SUCCESS: ${rules.length} rules found`);
    expect(result.status, result.output).toBe(0);
  });

  it('passes its promtool unit tests (sef-alerts.test.yml)', () => {
    const result = promtool(['test', 'rules', RULE_TESTS]);
    expect(result.output).toContain('SUCCESS');
    expect(result.status, result.output).toBe(0);
  });

  it('gives every rule a severity, a summary, a description and a runbook section that exists', () => {
    const docs = readFileSync(join(REPO, 'docs', 'observability.md'), 'utf8');
    const anchors = new Set(
      [...docs.matchAll(/^#+ (.+)$/gm)].map((m) =>
        m[1]!
          .toLowerCase()
          .replace(/[^a-z0-9 -]/g, '')
          .replaceAll(' ', '-'),
      ),
    );
    expect(rules.length).toBeGreaterThanOrEqual(13);
    for (const rule of rules) {
      expect(['critical', 'warning', 'info'], rule.alert).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary, rule.alert).toEqual(expect.any(String));
      expect(rule.annotations?.description, rule.alert).toEqual(expect.any(String));
      expect(rule.annotations?.runbook, rule.alert).toBe(`docs/observability.md#${rule.alert.toLowerCase()}`);
      expect(anchors, `docs/observability.md has no "#### ${rule.alert}" section`).toContain(
        rule.alert.toLowerCase(),
      );
    }
  });

  it('has a unit test for every rule where it fires and one where it does not', () => {
    const tests = parse(readFileSync(RULE_TESTS, 'utf8')) as {
      tests: Array<{ alert_rule_test?: Array<{ alertname: string; exp_alerts?: unknown[] }> }>;
    };
    const cases = tests.tests.flatMap((t) => t.alert_rule_test ?? []);
    for (const rule of rules) {
      const mine = cases.filter((c) => c.alertname === rule.alert);
      expect(
        mine.some((c) => (c.exp_alerts ?? []).length > 0),
        `${rule.alert}: no case where it fires`,
      ).toBe(true);
      expect(
        mine.some((c) => (c.exp_alerts ?? []).length === 0),
        `${rule.alert}: no case where it does not fire`,
      ).toBe(true);
    }
  });

  it('uses only metrics the forwarder exports, and the fleet metrics of the contract', async () => {
    const exported = new Set(
      (await createMetrics({ processMetrics: false }).registry.getMetricsAsJSON()).map((m) => m.name),
    );
    const forwarder = groups.find((g) => g.name === 'sef-forwarder')!.rules;
    const fleet = groups.find((g) => g.name === 'sef-fleet')!.rules;
    expect(forwarder.length + fleet.length).toBe(rules.length);
    for (const rule of forwarder) {
      for (const name of metricNames(rule.expr)) expect(exported, `${rule.alert}: ${name}`).toContain(name);
    }
    for (const rule of fleet) {
      for (const name of metricNames(rule.expr))
        expect(FLEET_METRICS, `${rule.alert}: ${name}`).toContain(name);
    }
  });
});
