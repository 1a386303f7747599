/**
 * Every source type the forwarder knows, mirroring the sink registry (src/sinks/registry.ts). To add a source:
 * one folder src/sources/<type>/ with a light factory.ts (type, options schema, lazy `create`; see
 * SourceFactory in src/sources/types.ts) and one line in this list. The config schema builds its `source`
 * section from these entries, so only light modules are imported here.
 */
import { imdsSourceFactory } from './imds/factory.ts';
import { replaySourceFactory } from './replay/factory.ts';
import type { SourceFactory } from './types.ts';

export const SOURCE_FACTORIES = [
  imdsSourceFactory,
  replaySourceFactory,
] as const satisfies readonly SourceFactory[];

export function findSourceFactory(type: string): SourceFactory | undefined {
  return (SOURCE_FACTORIES as readonly SourceFactory[]).find((f) => f.type === type);
}
