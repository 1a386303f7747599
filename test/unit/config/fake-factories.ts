/** Sink factories for config tests (the real registry fills up as sinks land; these keep the tests stable). */
import { z } from 'zod';
import { secretSchema } from '../../../src/secret.ts';
import type { Sink, SinkFactory } from '../../../src/sinks/types.ts';

function nullSink(name: string): Sink {
  return { name, maxBatch: 10, deliver: async () => {} };
}

export const FAKE_FACTORIES: SinkFactory[] = [
  {
    type: 'stdout',
    description: 'JSON lines on stdout.',
    optionsSchema: z.object({}),
    create: nullSink,
  },
  {
    type: 'file',
    description: 'JSON lines appended to a file.',
    optionsSchema: z.object({ path: z.string().min(1), maxBytes: z.number().int().positive().default(1000) }),
    heartbeats: { default: false },
    create: nullSink,
  },
  {
    type: 'hook',
    description: 'A webhook.',
    optionsSchema: z.object({ url: secretSchema(), timeoutMs: z.number().int().positive().default(5000) }),
    defaultFilter: { scope: 'this-vm', transitions: ['scheduled', 'started'] },
    create: nullSink,
  },
];
