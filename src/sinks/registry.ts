/**
 * Every sink type the forwarder knows. To add a sink: write src/sinks/<kind>/index.ts exporting a SinkFactory
 * and add it to this list (and document it in docs/sinks.md).
 */
import { eventHubsSinkFactory } from './event-hubs/index.ts';
import { execSinkFactory } from './exec/index.ts';
import { fileSinkFactory } from './file/index.ts';
import { otelSinkFactory } from './otel/index.ts';
import { stdoutSinkFactory } from './stdout/index.ts';
import type { SinkFactory } from './types.ts';
import { slackSinkFactory, teamsSinkFactory, webhookSinkFactory } from './webhook/index.ts';

export const SINK_FACTORIES: readonly SinkFactory[] = [
  eventHubsSinkFactory,
  otelSinkFactory,
  webhookSinkFactory,
  slackSinkFactory,
  teamsSinkFactory,
  stdoutSinkFactory,
  fileSinkFactory,
  execSinkFactory,
];

export function findSinkFactory(type: string): SinkFactory | undefined {
  return SINK_FACTORIES.find((f) => f.type === type);
}
