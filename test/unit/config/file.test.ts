/** Reading a YAML config file: a syntax error says where and shows the lines it points at (no secret among them). */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, readConfigFile } from '../../../src/config/index.ts';
import { REPO } from '../../support/child.ts';
import { makeTempDir } from '../../support/tmp.ts';

const tmp = makeTempDir('sef-config-file-');
afterAll(() => tmp.cleanup());

let counter = 0;
function problemsOf(text: string): { heading: string; problems: readonly string[] } {
  const file = join(tmp.dir, `config-${++counter}.yaml`);
  writeFileSync(file, text);
  try {
    readConfigFile(file);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    const e = error as ConfigError;
    return { heading: e.message.split('\n')[0]!, problems: e.problems };
  }
  throw new Error('expected a ConfigError');
}

describe('a YAML syntax error', () => {
  it('ends in the lines it points at, with a caret under the column, not in a bare ":"', () => {
    // The newcomer's file: a flow map opened on line 3 and never closed.
    const { heading, problems } = problemsOf(
      'imds:\n  pollIntervalMs: 1000\nsinks: [{ name: out, type: stdout\nlog: { level: info }\n',
    );
    expect(heading).toMatch(/is not valid YAML:$/);
    const [first, ...others] = problems;
    expect(first!.split('\n')).toEqual([
      expect.stringMatching(/ at line 4, column 1:$/),
      '    sinks: [{ name: out, type: stdout',
      '    log: { level: info }',
      '    ^',
    ]);
    // The errors that follow from the first one are one line each, ending at their position.
    for (const other of others) expect(other).toMatch(/ at line \d+, column \d+$/);
  });

  it('shows the line of a duplicate key and where the second one starts', () => {
    const { problems } = problemsOf('stateDir: /a\nstateDir: /b\n');
    expect(problems).toEqual([
      'Map keys must be unique at line 2, column 1:\n    stateDir: /a\n    stateDir: /b\n    ^',
    ]);
  });

  it('masks an inline key or token in the quoted lines, keeping the caret in place', () => {
    const key = 'R0123456789abcdef0123456789abcdef';
    const { problems } = problemsOf(
      `sinks:\n  - name: pd\n    type: pagerduty\n    routingKey: ${key}\n  oops: [\n`,
    );
    const text = problems.join('\n');
    expect(text).not.toContain(key);
    expect(text).toContain(`routingKey: ${'*'.repeat(key.length)}`);
    expect(problems[0]!.split('\n').at(-1)).toBe('    ^');
  });
});

describe('the YAML parser is let go after reading (start-up footprint)', () => {
  it('readConfigFile parses, and afterwards no module of the yaml package stays in the require cache', () => {
    const file = join(tmp.dir, 'let-go.yaml');
    writeFileSync(file, 'sinks:\n  - { name: out, type: stdout }\n');
    const bad = join(tmp.dir, 'let-go-bad.yaml');
    writeFileSync(bad, 'sinks: [{ name: out\n');
    // A fresh process: the test runner's own cache would say nothing about the forwarder's.
    const module = pathToFileURL(join(REPO, 'src', 'config', 'file.ts')).href;
    const script = `
      import { createRequire } from 'node:module';
      const { readConfigFile } = await import(${JSON.stringify(module)});
      const yamlModules = () => Object.keys(createRequire(import.meta.url).cache).filter((id) => /[\\\\/]node_modules[\\\\/]yaml[\\\\/]/.test(id));
      const config = readConfigFile(${JSON.stringify(file)});
      const afterGood = yamlModules().length;
      let error = '';
      try { readConfigFile(${JSON.stringify(bad)}); } catch (e) { error = e.message; }
      process.stdout.write(JSON.stringify({ config, afterGood, afterBad: yamlModules().length, error }));
    `;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: REPO,
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(child.stderr).toBe('');
    const result = JSON.parse(child.stdout) as {
      config: unknown;
      afterGood: number;
      afterBad: number;
      error: string;
    };
    expect(result.config).toEqual({ sinks: [{ name: 'out', type: 'stdout' }] });
    expect(result.error).toMatch(/is not valid YAML/);
    expect(result.afterGood).toBe(0);
    expect(result.afterBad).toBe(0);
  });
});

describe('reading the same file again (run --config reads it at the first poll and in the loader)', () => {
  it('parses an unchanged text once (yaml is not loaded again), returns a copy each time, and a changed one anew', () => {
    const file = join(tmp.dir, 'twice.yaml');
    writeFileSync(file, 'sinks:\n  - { name: out, type: stdout }\n');
    const module = pathToFileURL(join(REPO, 'src', 'config', 'file.ts')).href;
    // A fresh process, counting how often the yaml package's entry module is loaded (each load compiles it).
    const script = `
      import { registerHooks } from 'node:module';
      import { writeFileSync } from 'node:fs';
      let yamlLoads = 0;
      registerHooks({
        load(url, context, nextLoad) {
          if (/[\\\\/]node_modules[\\\\/]yaml[\\\\/]dist[\\\\/]index\\.js$/.test(url)) yamlLoads++;
          return nextLoad(url, context);
        },
      });
      const { readConfigFile } = await import(${JSON.stringify(module)});
      const file = ${JSON.stringify(file)};
      const loads = [];
      const first = readConfigFile(file);
      loads.push(yamlLoads);
      const second = readConfigFile(file);
      loads.push(yamlLoads);
      second.sinks[0].name = 'edited by the caller';
      const third = readConfigFile(file);
      writeFileSync(file, 'sinks:\\n  - { name: other, type: stdout }\\n');
      const changed = readConfigFile(file);
      loads.push(yamlLoads);
      process.stdout.write(JSON.stringify({ loads, first, third, changed, distinct: first !== third }));
    `;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: REPO,
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(child.stderr).toBe('');
    const result = JSON.parse(child.stdout) as Record<string, unknown>;
    expect(result).toEqual({
      loads: [1, 1, 2], // loaded for the first read, not for the same text again, again for a changed text
      first: { sinks: [{ name: 'out', type: 'stdout' }] },
      third: { sinks: [{ name: 'out', type: 'stdout' }] }, // a caller's edit of its copy changes nothing
      changed: { sinks: [{ name: 'other', type: 'stdout' }] },
      distinct: true,
    });
  });
});
