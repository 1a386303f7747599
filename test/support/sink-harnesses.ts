/**
 * Every sink type's compliance harness, keyed by its registered type (src/sinks/registry.ts), for the sink
 * compliance suite (test/unit/sinks/compliance.test.ts), which fails for a registered type missing here.
 *
 * To add one: write `harness.ts` beside the sink's tests (test/integration/sinks/<type>/), exporting a
 * `HarnessFactory` (test/support/sink-harness.ts: the `Harness` interface, the context the suite passes in,
 * the shared SECRET and helpers), and add one line to SINK_HARNESSES below.
 */
import { alertmanagerHarness } from '../integration/sinks/alertmanager/harness.ts';
import { azureMonitorHarness } from '../integration/sinks/azuremonitor/harness.ts';
import { execHarness, fileHarness, stdoutHarness } from '../integration/sinks/builtin/harness.ts';
import { eventHubsHarness } from '../integration/sinks/event-hubs/harness.ts';
import { otelHarness } from '../integration/sinks/otel/harness.ts';
import { pagerdutyHarness } from '../integration/sinks/pagerduty/harness.ts';
import { httpHarness } from '../integration/sinks/webhook/harness.ts';
import type { HarnessFactory } from './sink-harness.ts';

export const SINK_HARNESSES: Record<string, HarnessFactory> = {
  webhook: httpHarness('webhook'),
  slack: httpHarness('slack'),
  teams: httpHarness('teams'),
  alertmanager: alertmanagerHarness,
  pagerduty: pagerdutyHarness,
  otel: otelHarness,
  eventhubs: eventHubsHarness,
  azuremonitor: azureMonitorHarness,
  file: fileHarness,
  stdout: stdoutHarness,
  exec: execHarness,
};
