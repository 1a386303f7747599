/**
 * Every sink type the forwarder knows. To add a sink: write a SinkFactory (src/sinks/<kind>/index.ts, or a light
 * src/sinks/<kind>/factory.ts when the implementation has heavy dependencies; see src/sinks/types.ts), add it to
 * this list and document it in docs/sinks.md. Only light modules are imported here: the config schema, `--help`
 * and `config validate` load this file, and the SDKs load when a sink of their type is created.
 */
import { eventHubsSinkFactory } from './event-hubs/factory.ts';
import { execSinkFactory } from './exec/index.ts';
import { fileSinkFactory } from './file/index.ts';
import { otelSinkFactory } from './otel/factory.ts';
import { stdoutSinkFactory } from './stdout/index.ts';
import type { SinkFactory } from './types.ts';
import { slackSinkFactory, teamsSinkFactory, webhookSinkFactory } from './webhook/factory.ts';

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
