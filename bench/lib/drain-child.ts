/**
 * `node bench/lib/drain-child.ts KIND PROFILE TOTAL`: one drain measurement (bench/drain.ts) in a fresh process;
 * prints its result as one JSON line. With PROFILE "as-shipped" the V8 settings of `run` (src/cli/heap.ts) are
 * applied before the benchmark's modules load, as src/cli/main.ts applies them before the run command's.
 */
import { sizeHeapForLongRun } from '../../src/cli/heap.ts';

const [kind, profile, total] = process.argv.slice(2);
if (profile === 'as-shipped') sizeHeapForLongRun();
const { drainOnce } = await import('../drain.ts');
const result = await drainOnce(
  kind as Parameters<typeof drainOnce>[0],
  profile as Parameters<typeof drainOnce>[1],
  Number(total),
);
process.stdout.write(`${JSON.stringify(result)}\n`);
