/**
 * Every relative link in README.md and docs/*.md points at a file that exists, and so does every repository path
 * quoted in inline code (`src/…`, `test/…`, …): docs stay true as files move.
 */
import { existsSync, globSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';

const repo = join(import.meta.dirname, '..', '..', '..');
const documents = [
  'README.md',
  ...readdirSync(join(repo, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

function relativeLinks(markdown: string): string[] {
  const links: string[] = [];
  for (const match of markdown.matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = match[1]!;
    if (/^[a-z]+:/i.test(target) || target.startsWith('#')) continue;
    links.push(target.split('#')[0]!);
  }
  return links;
}

/** The top-level folders whose paths the docs quote. */
const REPO_FOLDERS = ['src', 'test', 'bench', 'scripts', 'packaging', 'config', 'schemas'];

/**
 * Repository paths quoted in inline code spans (code blocks excluded), with their line numbers. A line anchor
 * (`file.ts:12`, `file.ts:12-20`) or `#anchor` is dropped, and so is trailing punctuation.
 */
function quotedPaths(markdown: string): Array<{ line: number; path: string }> {
  const prose = markdown.replace(/^\s*```[\s\S]*?^\s*```/gm, (block) => block.replace(/[^\n]/g, ' '));
  const start = new RegExp(`^(?:${REPO_FOLDERS.join('|')})/`);
  const found: Array<{ line: number; path: string }> = [];
  for (const span of prose.matchAll(/`([^`]+)`/g)) {
    for (const word of span[1]!.split(/[\s,;()'"=]+/)) {
      if (!start.test(word)) continue;
      const path = word
        .replace(/#.*$/, '')
        .replace(/:\d+(?:-\d+)?$/, '')
        .replace(/[.,;:]+$/, '');
      found.push({ line: prose.slice(0, span.index).split('\n').length, path });
    }
  }
  return found;
}

/**
 * Whether a quoted path exists. A path with a placeholder (`<type>`, `…`, `...`) or a glob (`*`) stands for the
 * files it matches: at least one must exist.
 */
function quotedPathExists(path: string): boolean {
  const pattern = path.replace(/<[^>]*>|…|\.\.\./g, '*').replace(/\/$/, '');
  if (!pattern.includes('*')) return existsSync(join(repo, path));
  return globSync(pattern, { cwd: repo }).length > 0;
}

describe('documentation links', () => {
  it.each(documents)('%s links only to files that exist', (doc) => {
    const text = readFileSync(join(repo, doc), 'utf8');
    const missing = relativeLinks(text).filter((link) => !existsSync(join(repo, dirname(doc), link)));
    expect(missing).toEqual([]);
  });

  it('the README links to every document in docs/', () => {
    const readme = readFileSync(join(repo, 'README.md'), 'utf8');
    const linked = new Set(relativeLinks(readme));
    const unlinked = documents.filter((d) => d.startsWith('docs/') && !linked.has(d));
    expect(unlinked).toEqual([]);
  });
});

describe('repository paths quoted in the documentation', () => {
  it.each(documents)('%s quotes only paths that exist', (doc) => {
    const missing = quotedPaths(readFileSync(join(repo, doc), 'utf8'))
      .filter(({ path }) => !quotedPathExists(path))
      .map(({ line, path }) => `${doc}:${line} ${path}`);
    expect(missing).toEqual([]);
  });

  it('finds the quoted paths (the check is not vacuous)', () => {
    const all = documents.flatMap((doc) => quotedPaths(readFileSync(join(repo, doc), 'utf8')));
    expect(all.length).toBeGreaterThanOrEqual(100);
    const markdown = [
      'See `src/sinks/types.ts:12` and (`src/secret.ts#L3`, `docs/cli.md`).',
      '```',
      'src/in-a-code-block.ts',
      '```',
      'Run `node scripts/gen-config-docs.ts`; one per `src/sinks/<type>/`, scenarios in `config/scenarios/*.yaml`.',
      'Gone: `src/config/secret.ts`.',
    ].join('\n');
    const quoted = quotedPaths(markdown);
    expect(quoted).toEqual([
      { line: 1, path: 'src/sinks/types.ts' },
      { line: 1, path: 'src/secret.ts' },
      { line: 5, path: 'scripts/gen-config-docs.ts' },
      { line: 5, path: 'src/sinks/<type>/' },
      { line: 5, path: 'config/scenarios/*.yaml' },
      { line: 6, path: 'src/config/secret.ts' },
    ]);
    expect(quoted.filter(({ path }) => !quotedPathExists(path)).map(({ path }) => path)).toEqual([
      'src/config/secret.ts',
    ]);
    expect(quotedPathExists('src/nosuchdir/<type>/')).toBe(false);
  });
});
