/**
 * Every sink type the forwarder knows. Adding one is a folder src/sinks/<type>/ plus one line here: the steps
 * are in docs/sinks.md ("Writing a sink, step by step"). Only light modules are imported here: the config
 * schema, `--help` and `config validate` load this file, and the implementations (and their SDKs) load when a
 * sink of their type is created.
 */
import { alertmanagerSinkFactory } from './alertmanager/factory.ts';
import { azureMonitorSinkFactory } from './azuremonitor/factory.ts';
import { eventHubsSinkFactory } from './event-hubs/factory.ts';
import { execSinkFactory } from './exec/factory.ts';
import { fileSinkFactory } from './file/factory.ts';
import { otelSinkFactory } from './otel/factory.ts';
import { pagerdutySinkFactory } from './pagerduty/factory.ts';
import { stdoutSinkFactory } from './stdout/factory.ts';
import type { SinkFactory } from './types.ts';
import { slackSinkFactory, teamsSinkFactory, webhookSinkFactory } from './webhook/factory.ts';

export const SINK_FACTORIES: readonly SinkFactory[] = [
  eventHubsSinkFactory,
  azureMonitorSinkFactory,
  otelSinkFactory,
  webhookSinkFactory,
  slackSinkFactory,
  teamsSinkFactory,
  alertmanagerSinkFactory,
  pagerdutySinkFactory,
  stdoutSinkFactory,
  fileSinkFactory,
  execSinkFactory,
];

export function findSinkFactory(type: string): SinkFactory | undefined {
  return SINK_FACTORIES.find((f) => f.type === type);
}
