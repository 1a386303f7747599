/**
 * `config show` never prints URL userinfo (issue 14 item 5): a password embedded in an OTel endpoint
 * (`http://user:PASS@host`) is a secret like any other (there is no flag that shows secrets). Real CLI process.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { MAIN, REPO } from '../../support/child.ts';
import { makeTempDir } from '../../support/tmp.ts';

const run = promisify(execFile);
const tmp = makeTempDir('sef-config-show-');
afterAll(() => tmp.cleanup());

const PASSWORD = 'Sh0wMeNot-pa55word';

describe('config show', () => {
  it('hides a password in a URL', async () => {
    const file = join(tmp.dir, 'forwarder.yaml');
    writeFileSync(
      file,
      [
        `stateDir: ${JSON.stringify(join(tmp.dir, 'state'))}`,
        'sinks:',
        `  - { name: otel, type: otel, protocol: http/json, endpoint: "http://collector:${PASSWORD}@127.0.0.1:4318" }`,
        '',
      ].join('\n'),
    );
    const { stdout, stderr } = await run(process.execPath, [MAIN, 'config', 'show', '--config', file], {
      cwd: REPO,
      timeout: 30_000,
    });
    expect(stdout + stderr).not.toContain(PASSWORD);
    expect(stdout).toContain('http://[redacted]@127.0.0.1:4318');
  });
});
