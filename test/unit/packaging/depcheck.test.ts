/**
 * `npm run depcheck` is sighted: dependency-cruiser, run as the script runs it (swc parses the .ts files, since
 * its TypeScript parser needs typescript < 7), sees every file of src and every import in it, reports a
 * deliberate violation of each rule of .dependency-cruiser.cjs written in TypeScript (value, type-only, inline
 * type and dynamic imports alike), and runs without an environment warning. A check that cannot see would pass
 * vacuously; these tests fail instead.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseFileSync } from '@swc/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repo = join(import.meta.dirname, '..', '..', '..');
const config = join(repo, '.dependency-cruiser.cjs');
const depcruiseBin = join(repo, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruiser.mjs');

interface Dependency {
  module: string;
  resolved: string;
  dependencyTypes: string[];
}
interface CruiseJson {
  modules: Array<{ source: string; dependencies: Dependency[] }>;
  summary: {
    violations: Array<{ from: string; to: string; rule: { name: string } }>;
    environment?: { issues?: Array<{ name: string; description: string }> };
  };
}

/** `depcruise src --config .dependency-cruiser.cjs` (the depcheck script's call) in `cwd`, as JSON. */
function depcruise(cwd: string): { status: number | null; result: CruiseJson; stderr: string } {
  const run = spawnSync(
    process.execPath,
    [depcruiseBin, 'src', '--config', config, '--output-type', 'json'],
    { cwd, encoding: 'utf8', timeout: 60_000, maxBuffer: 64 * 1024 * 1024 },
  );
  if (run.stdout === '') throw new Error(`depcruise printed nothing (exit ${run.status}): ${run.stderr}`);
  return { status: run.status, result: JSON.parse(run.stdout) as CruiseJson, stderr: run.stderr };
}

/** Every .ts file under a directory, as a repo-relative path with forward slashes. */
function tsFiles(root: string, dir: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => `${dir}/${f.split('\\').join('/')}`)
    .sort();
}

/**
 * Every module a file names, read from swc's whole syntax tree (not dependency-cruiser's visitor): import and
 * export declarations, `import()` calls, `require()` calls, `import x = require()` and inline type imports
 * (`import('x').T`) wherever they stand.
 */
function namedModules(file: string): string[] {
  const at = (node: unknown, ...path: string[]): unknown =>
    path.reduce<unknown>(
      (v, k) => (v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined),
      node,
    );
  const found = new Set<string>();
  const add = (name: unknown) => {
    if (typeof name === 'string') found.add(name);
  };
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const item of node) walk(item);
      return;
    }
    if (node === null || typeof node !== 'object') return;
    switch (at(node, 'type')) {
      case 'ImportDeclaration':
      case 'ExportAllDeclaration':
      case 'ExportNamedDeclaration':
        add(at(node, 'source', 'value'));
        break;
      case 'TsImportType':
        add(at(node, 'argument', 'value'));
        break;
      case 'TsExternalModuleReference':
        add(at(node, 'expression', 'value'));
        break;
      case 'CallExpression': {
        const isImport = at(node, 'callee', 'type') === 'Import';
        const isRequire =
          at(node, 'callee', 'type') === 'Identifier' && at(node, 'callee', 'value') === 'require';
        if ((isImport || isRequire) && at(node, 'arguments', '0', 'expression', 'type') === 'StringLiteral') {
          add(at(node, 'arguments', '0', 'expression', 'value'));
        }
        break;
      }
    }
    for (const value of Object.values(node)) walk(value);
  };
  walk(parseFileSync(file, { syntax: 'typescript' }).body);
  return [...found];
}

/** `file → module` for every module a .ts file under root/src names that the cruise has no dependency for. */
function unseenImports(root: string, cruise: CruiseJson): string[] {
  const bySource = new Map(cruise.modules.map((m) => [m.source, m]));
  const missed: string[] = [];
  for (const file of tsFiles(root, 'src')) {
    const seen = new Set(bySource.get(file)?.dependencies.map((d) => d.module));
    for (const name of namedModules(join(root, file))) {
      // dependency-cruiser names a builtin without its node: prefix unless it exists only with one (node:sqlite).
      if (!seen.has(name) && !seen.has(name.replace(/^node:/, ''))) missed.push(`${file} → ${name}`);
    }
  }
  return missed;
}

describe('dependency-cruiser over src (npm run depcheck)', () => {
  let src: CruiseJson;
  beforeAll(() => {
    const run = depcruise(repo);
    expect(run.status, run.stderr).toBe(0);
    src = run.result;
  });

  it('is the call the depcheck script makes', () => {
    const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts.depcheck).toContain('depcruise src --config .dependency-cruiser.cjs');
  });

  it('runs without an environment warning (no "missing-tsc-transpiler")', () => {
    expect(src.summary.environment?.issues ?? []).toEqual([]);
  });

  it('cruises exactly the .ts files under src', () => {
    const cruised = src.modules.map((m) => m.source).filter((s) => s.startsWith('src/'));
    expect(cruised.sort()).toEqual(tsFiles(repo, 'src'));
  });

  it('sees every module each file of src names (write `import type` where it misses a nested inline type import)', () => {
    expect(unseenImports(repo, src)).toEqual([]);
  });
});

describe('dependency-cruiser reports a violation of each rule in a TypeScript fixture', () => {
  let fixture: string;
  let run: ReturnType<typeof depcruise>;
  const files: Record<string, string> = {
    // no-circular, through type-only imports both ways
    'src/store/a.ts': "import type { B } from './b.ts';\nexport type A = { b?: B };\n",
    'src/store/b.ts': "import type { A } from './a.ts';\nexport type B = { a?: A };\n",
    // no-cli-below-cli, through a dynamic import
    'src/store/c.ts': "export const load = () => import('../cli/main.ts');\n",
    'src/cli/main.ts': 'export const main = 1;\n',
    // transform-is-pure (value import of an I/O builtin)
    'src/transform/net.ts': "import { connect } from 'node:net';\nexport const c = connect;\n",
    // transform-is-pure, through process.getBuiltinModule (the way src takes node:fs; not an import statement)
    'src/transform/builtin.ts':
      "const { readFileSync } = process.getBuiltinModule('node:fs');\nexport const r = readFileSync;\n",
    // transform-imports-only-transform-and-domain, through an inline type import (a whole annotation)
    'src/transform/reach.ts':
      "export function run(engine: import('../delivery/engine.ts').Engine) {\n  engine.run();\n}\n",
    // the same import nested in a type: swc's extraction does not report it (unseenImports does)
    'src/transform/nested.ts': "export let engine: import('../delivery/engine.ts').Engine | null = null;\n",
    'src/delivery/engine.ts': 'export type Engine = { run(): void };\n',
    // no-sink-imports-another-sink, through a type-only re-export
    'src/sinks/one/sink.ts': "export type { Two } from '../two/sink.ts';\n",
    'src/sinks/two/sink.ts': 'export type Two = number;\n',
    // no-fleet-imports-a-sink, through a value import
    'src/fleet/config.ts': "import { two } from '../sinks/two/value.ts';\nexport const config = two;\n",
    'src/sinks/two/value.ts': 'export const two = 2;\n',
    // no-source-imports-another-source, through a value import
    'src/sources/one/source.ts': "import { two } from '../two/source.ts';\nexport const one = two;\n",
    'src/sources/two/source.ts': 'export const two = 2;\n',
    // builtins-without-esm-facade (its type-only import is allowed)
    'src/server.ts':
      "import { createServer } from 'node:http';\nimport type { Server } from 'node:http';\nexport const s: Server = createServer();\n",
    // not-to-unresolvable
    'src/typo.ts': "export { x } from './no-such-file.ts';\n",
  };

  beforeAll(() => {
    fixture = mkdtempSync(join(tmpdir(), 'sef-depcheck-'));
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(fixture, path)), { recursive: true });
      writeFileSync(join(fixture, path), text);
    }
    run = depcruise(fixture);
  });
  afterAll(() => rmSync(fixture, { recursive: true, force: true }));

  it('cruises every fixture file', () => {
    const cruised = run.result.modules.map((m) => m.source).filter((s) => s.startsWith('src/'));
    expect(cruised.sort()).toEqual(tsFiles(fixture, 'src'));
  });

  it('fails with exactly the planted violations', () => {
    const found = run.result.summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`).sort();
    expect(found).toEqual(
      [
        'no-circular: src/store/a.ts → src/store/b.ts',
        'no-cli-below-cli: src/store/c.ts → src/cli/main.ts',
        'transform-is-pure: src/transform/builtin.ts → fs',
        'transform-is-pure: src/transform/net.ts → net',
        'transform-imports-only-transform-and-domain: src/transform/reach.ts → src/delivery/engine.ts',
        'no-sink-imports-another-sink: src/sinks/one/sink.ts → src/sinks/two/sink.ts',
        'no-source-imports-another-source: src/sources/one/source.ts → src/sources/two/source.ts',
        'no-fleet-imports-a-sink: src/fleet/config.ts → src/sinks/two/value.ts',
        'builtins-without-esm-facade: src/server.ts → http',
        'not-to-unresolvable: src/typo.ts → ./no-such-file.ts',
      ].sort(),
    );
    // The JSON report always exits 0; the depcheck script's own call (the `err` report) fails the build.
    const plain = spawnSync(process.execPath, [depcruiseBin, 'src', '--config', config], {
      cwd: fixture,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(plain.status).not.toBe(0);
    expect(plain.stdout).toContain('builtins-without-esm-facade');
  });

  it('the completeness check above catches the one import form it does not report', () => {
    expect(unseenImports(fixture, run.result)).toEqual(['src/transform/nested.ts → ../delivery/engine.ts']);
  });
});
