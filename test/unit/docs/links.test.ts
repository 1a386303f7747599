/** Every relative link in README.md and docs/*.md points at a file that exists (docs stay true as files move). */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
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
