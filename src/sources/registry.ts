/**
 * Every source type the forwarder knows, mirroring the sink registry (src/sinks/registry.ts). To add a source:
 * one folder src/sources/<type>/ with a light factory.ts (type, options schema, lazy `create`; see
 * SourceFactory in src/sources/types.ts) and one line in this list. The config schema builds its `source`
 * section from these entries, so only light modules are imported here.
 */
import type { z } from 'zod';
import { imdsSourceFactory } from './imds/factory.ts';
import type { ImdsSourceSettings } from './imds-protocol/imds-settings.ts';
import { replaySourceFactory } from './replay/factory.ts';
import type { SourceFactory } from './types.ts';

/** The config sections some source reads besides its `source:` options: what the pipeline must pass. */
export type SourceSettings = ImdsSourceSettings;

type RegisteredSourceFactory = SourceFactory<z.ZodObject, SourceSettings>;

export const SOURCE_FACTORIES = [
  imdsSourceFactory,
  replaySourceFactory,
] as const satisfies readonly RegisteredSourceFactory[];

export function findSourceFactory(type: string): RegisteredSourceFactory | undefined {
  return (SOURCE_FACTORIES as readonly RegisteredSourceFactory[]).find((f) => f.type === type);
}
