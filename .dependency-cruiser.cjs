/**
 * Architecture rules of issue 16, checked by `npm run depcheck` (part of `npm test`). Why dependency-cruiser and
 * what each rule protects: docs/dependencies.md and docs/architecture notes in docs/sinks.md. Type-only imports
 * (`import type`, an inline `import('x').T` that is a whole annotation) and dynamic imports (`await import()`)
 * count as dependencies like any other: the swc parser reports them, and no rule excludes a dependency type. An
 * inline `import('x')` nested in a type (`Promise<import('x').T>`, `typeof import('x')`) is not reported: write
 * `import type` instead (test/unit/packaging/depcheck.test.ts fails on one). Cycles between components (a
 * top-level folder of src, or one source or sink folder) are checked by scripts/check-component-cycles.ts, which
 * reads the same graph. test/unit/packaging/depcheck.test.ts proves the graph is complete: every .ts file of src
 * is in it with every import it has, and a deliberate violation of each rule in a .ts fixture is reported.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Modules must not import each other in a cycle (type-only and dynamic imports included).',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'no-cli-below-cli',
      severity: 'error',
      comment: 'Only src/cli imports src/cli: shared helpers (usage errors, version) belong below the CLI.',
      from: { path: '^src/', pathNot: '^src/cli/' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'transform-is-pure',
      severity: 'error',
      comment: 'src/transform is pure (prev state + poll outcome -> next state + records): no I/O modules.',
      from: { path: '^src/transform/' },
      to: {
        path: [
          '^(node:)?(fs|fs/promises|http|https|http2|net|tls|dgram|dns|dns/promises|sqlite|child_process|worker_threads|cluster|readline|inspector)$',
          '(^|/)node_modules/(undici|@azure/|@opentelemetry/|@grpc/|mustache|commander|rhea)',
        ],
      },
    },
    {
      name: 'transform-imports-only-transform-and-domain',
      severity: 'error',
      comment: 'src/transform may not reach I/O through another module: it imports only pure modules.',
      from: { path: '^src/transform/' },
      to: { path: '^src/(store|delivery|sinks|sources|pipeline|approval|fleet|telemetry|cli|simulator)/' },
    },
    {
      name: 'no-sink-imports-another-sink',
      severity: 'error',
      comment:
        "A sink folder imports only its own files and shared sink code (src/sinks/*.ts, and src/sinks/http/: the HTTP delivery core every HTTP sink shares), never another sink's folder.",
      from: { path: '^src/sinks/([^/]+)/' },
      to: { path: '^src/sinks/([^/]+)/', pathNot: ['^src/sinks/$1/', '^src/sinks/http/'] },
    },
    {
      name: 'no-source-imports-another-source',
      severity: 'error',
      comment:
        "A source folder imports only its own files and shared source code, never another source's folder.",
      from: { path: '^src/sources/([^/]+)/' },
      to: {
        path: '^src/sources/([^/]+)/',
        pathNot: ['^src/sources/$1/', '^src/sources/(imds-protocol|capture)/'],
      },
    },
    {
      name: 'no-fleet-imports-a-sink',
      severity: 'error',
      comment:
        'The fleet consumer reads what the Event Hubs sink sends but never imports a sink: what both need (Azure credentials, Event Hubs targets and connection strings) lives in src/azure.',
      from: { path: '^src/fleet/' },
      to: { path: '^src/sinks/' },
    },
    {
      name: 'builtins-without-esm-facade',
      severity: 'error',
      comment:
        "Value imports of node:http, node:util, node:fs and node:crypto build Node's ESM facade of the module, which " +
        'reads every export, lazy getters included: node:http then loads undici and the web streams (~70 internal ' +
        'modules), node:fs its promises API, node:crypto WebCrypto — resident for the life of the sidecar. Take them ' +
        "with process.getBuiltinModule('node:http') (the CommonJS object); type-only imports are fine (docs/dependencies.md, Loading cost).",
      from: { path: '^src/' },
      to: {
        dependencyTypes: ['core'],
        path: '^(node:)?(http|util|fs|crypto)$',
        // process.getBuiltinModule(...) is the way this rule asks for (an exotic require, below).
        dependencyTypesNot: ['type-only', 'exotic-require'],
      },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: 'An import that does not resolve (typo, missing dependency).',
      from: { path: '^src/' },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // swc parses the .ts files (dependency-cruiser's own TypeScript parser needs typescript < 7; acorn reads
    // JavaScript only). swc's extraction keeps type-only imports whatever tsPreCompilationDeps says: that option
    // only selects the tsc-based extraction, which needs typescript < 7. `true` changed nothing here but made
    // dependency-cruiser warn on every run that it "is likely to have missed TypeScript sources"
    // (missing-tsc-transpiler); `false` keeps swc the extractor even if a typescript < 7 ever gets installed.
    parser: 'swc',
    // src takes node:http/util/fs/crypto through process.getBuiltinModule (builtins-without-esm-facade): count
    // those calls as dependencies, so that e.g. transform-is-pure sees process.getBuiltinModule('node:fs').
    exoticRequireStrings: ['process.getBuiltinModule'],
    tsPreCompilationDeps: false,
    moduleSystems: ['es6', 'cjs'],
    builtInModules: { add: ['node:sqlite', 'sqlite'] },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
      extensions: ['.ts', '.js', '.json'],
    },
  },
};
