/**
 * Vitest setup file: every TCP connection a test process opens must go to the loopback interface
 * (./loopback-guard.cjs: a connection to any other address, 169.254.169.254 above all, throws at once, naming the
 * address), so a test can never send traffic off this machine even by accident (e.g. a forgotten --imds-endpoint
 * falling back to the default). The guard is also added to NODE_OPTIONS (`--require`), so the Node.js child
 * processes tests spawn with the inherited environment are guarded the same way.
 */
import { createRequire } from 'node:module';

const guardFile = createRequire(import.meta.url).resolve('./loopback-guard.cjs');
const guard = createRequire(import.meta.url)(guardFile) as { isLoopbackHost(host: string): boolean };

/** Whether `host` (an address or name, optionally in [brackets]) is on the loopback interface. */
export const isLoopbackHost = guard.isLoopbackHost;

const option = `--require ${JSON.stringify(guardFile)}`;
if (!(process.env.NODE_OPTIONS ?? '').includes(guardFile)) {
  process.env.NODE_OPTIONS = [process.env.NODE_OPTIONS, option].filter(Boolean).join(' ');
}
