/**
 * Fails when components of src import each other in a cycle (part of `npm run depcheck`, hence `npm test`).
 * dependency-cruiser's `no-circular` rule (.dependency-cruiser.cjs) catches cycles between files; this script
 * reads the same dependency graph (same options: type-only and dynamic imports count) and collapses it to
 * components:
 *
 * - a top-level folder of src (src/store, src/delivery, ...) is one component;
 * - each source folder (src/sources/<type>/) and each sink folder (src/sinks/<type>/) is a component of its own;
 * - the shared files directly in src/sources and src/sinks (types, proxy, ...) form the `sources` and `sinks`
 *   components, and each registry (src/sources/registry.ts, src/sinks/registry.ts) is its own component: it
 *   composes the folders, which themselves depend on the shared files;
 * - a file directly in src (log.ts, platform.ts, ...) is its own component.
 *
 * Prints every cycle (strongly connected component) with one file-level import for each edge inside it.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { cruise, type ICruiseOptions, type IModule } from 'dependency-cruiser';

const root = join(import.meta.dirname, '..');
const require = createRequire(import.meta.url);
const config = require(join(root, '.dependency-cruiser.cjs')) as { options: ICruiseOptions };

export function componentOf(file: string): string | undefined {
  const parts = file.split('/');
  if (parts[0] !== 'src') return undefined;
  if (parts.length === 2) return file;
  const top = parts[1] as string;
  if (top === 'sources' || top === 'sinks') {
    if (parts.length === 3) return parts[2] === 'registry.ts' ? `src/${top}/registry.ts` : `src/${top}`;
    return `src/${top}/${parts[2]}`;
  }
  return `src/${top}`;
}

const previous = process.cwd();
process.chdir(root);
const result = await cruise(['src'], { ...config.options, validate: false });
process.chdir(previous);
if (typeof result.output === 'string') throw new Error('dependency-cruiser returned a report, not a graph');
const modules: IModule[] = result.output.modules;

/** component -> component -> one example "from → to" import */
const edges = new Map<string, Map<string, string>>();
for (const m of modules) {
  const from = componentOf(m.source);
  if (from === undefined) continue;
  for (const d of m.dependencies) {
    const to = componentOf(d.resolved);
    if (to === undefined || to === from) continue;
    let out = edges.get(from);
    if (out === undefined) {
      out = new Map();
      edges.set(from, out);
    }
    if (!out.has(to)) out.set(to, `${m.source} → ${d.resolved} (${d.dependencyTypes.join(', ')})`);
  }
}

// Tarjan's strongly connected components.
const index = new Map<string, number>();
const low = new Map<string, number>();
const stack: string[] = [];
const onStack = new Set<string>();
const cycles: string[][] = [];
let next = 0;
function visit(v: string): void {
  index.set(v, next);
  low.set(v, next);
  next += 1;
  stack.push(v);
  onStack.add(v);
  for (const w of edges.get(v)?.keys() ?? []) {
    if (!index.has(w)) {
      visit(w);
      low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
    } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
  }
  if (low.get(v) === index.get(v)) {
    const scc: string[] = [];
    let w: string;
    do {
      w = stack.pop() as string;
      onStack.delete(w);
      scc.push(w);
    } while (w !== v);
    if (scc.length > 1) cycles.push(scc.sort());
  }
}
for (const v of [...edges.keys()].sort()) if (!index.has(v)) visit(v);

if (cycles.length === 0) {
  process.stdout.write(`✔ no cycles between components (${edges.size} components with imports)\n`);
} else {
  for (const scc of cycles) {
    process.stdout.write(`\n  error no-component-cycle: ${scc.join(' ⇄ ')}\n`);
    const members = new Set(scc);
    for (const from of scc)
      for (const [to, example] of edges.get(from) ?? [])
        if (members.has(to)) process.stdout.write(`    ${example}\n`);
  }
  process.stdout.write(
    `\nx ${cycles.length} cycle(s) between components: move the shared code both sides need into a shared module\n`,
  );
  process.exitCode = 1;
}
