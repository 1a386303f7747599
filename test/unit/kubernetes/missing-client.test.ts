/**
 * @kubernetes/client-node is an optional peer dependency of the npm package: where it is not installed, the node
 * actions fail with what to install. The error is the real one Node raises for an import that finds no package
 * (a module in a directory with no node_modules above it).
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { missingClientError } from '../../../src/kubernetes/index.ts';
import { makeTempDir } from '../../support/tmp.ts';

const tmp = makeTempDir('sef-k8s-missing-');
afterAll(() => tmp.cleanup());

/** The error plain Node raises importing `specifier` from a directory with no node_modules above it. */
function importError(specifier: string): Error {
  const file = join(tmp.dir, `import-${specifier.replace(/\W/g, '_')}.mjs`);
  writeFileSync(
    file,
    `try { await import('${specifier}'); console.log('{}'); }\n` +
      'catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }\n',
  );
  const { code, message } = JSON.parse(execFileSync(process.execPath, [file], { encoding: 'utf8' })) as {
    code?: string;
    message?: string;
  };
  if (code === undefined) throw new Error(`${specifier} was found from ${tmp.dir}`);
  return Object.assign(new Error(message), { code });
}

describe('a missing @kubernetes/client-node', () => {
  it('is reported with the install command and the alternatives that include it', () => {
    const error = missingClientError(importError('@kubernetes/client-node'));
    expect(error?.message).toContain('`npm install -g @kubernetes/client-node@2`');
    expect(error?.message).toContain('release executable or the container image');
  });

  it('leaves other failures alone (another missing package, any other error)', () => {
    expect(missingClientError(importError('some-other-package'))).toBeUndefined();
    expect(missingClientError(new Error('boom'))).toBeUndefined();
  });
});
