/**
 * Every `scheduled-events-forwarder …` command line quoted in README.md and docs/*.md (code blocks and inline
 * code) parses with the real CLI: the program main.ts builds, with every action replaced by a recorder, so a
 * line is checked (command, options, arguments, option values) without running anything. Usage placeholders
 * are read as usage text: `[--sink NAME]` is checked as `--sink NAME`, `…` and `<eventId…>` stand for a value.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Command, CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../../src/cli/main.ts';

const repo = join(import.meta.dirname, '..', '..', '..');
const documents = [
  'README.md',
  ...readdirSync(join(repo, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** A command line in command position: at the start, after `$ ` or `sudo `, or as a path to the bin. */
const COMMAND_LINE = /^(?:\$\s+)?(?:sudo\s+)?(?:\S*\/)?scheduled-events-forwarder\s+([a-z].*)$/;

/** The command lines of one markdown document, with their line numbers. */
function quotedCommandLines(markdown: string): Array<{ line: number; text: string }> {
  const found: Array<{ line: number; text: string }> = [];
  const lines = markdown.split('\n');
  let inBlock = false;
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!;
    if (/^\s*```/.test(raw)) {
      inBlock = !inBlock;
      continue;
    }
    if (inBlock) {
      let text = raw.trim();
      const start = i;
      while (text.endsWith('\\') && i + 1 < lines.length) text = `${text.slice(0, -1)} ${lines[++i]!.trim()}`;
      const m = COMMAND_LINE.exec(text);
      if (m) found.push({ line: start + 1, text: m[1]! });
    }
  }
  // Inline code spans (they may wrap across lines in the markdown source); code blocks removed first.
  const prose = markdown.replace(/^\s*```[\s\S]*?^\s*```/gm, (block) => block.replace(/[^\n]/g, ' '));
  for (const span of prose.matchAll(/`([^`]+)`/g)) {
    const text = span[1]!.replace(/\s+/g, ' ').trim();
    const m = COMMAND_LINE.exec(text);
    if (m) found.push({ line: prose.slice(0, span.index).split('\n').length, text: m[1]! });
  }
  return found;
}

/** Shell-like words of a documented command line, with usage notation turned into concrete words. */
function words(text: string): string[] {
  const cut = text.replace(/\s#\s.*$/, '').split(/\s(?:\||&&|;|>)\s/)[0]!;
  const out: string[] = [];
  for (const m of cut.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)) {
    let word = m[1] ?? m[2] ?? m[3]!;
    if (m[3] !== undefined) {
      word = word.replace(/^\[/, '').replace(/\]$/, ''); // [--sink NAME] → --sink NAME
      if (/^<.*>$/.test(word) || word === '…' || word === '...') word = 'VALUE';
    }
    if (word !== '') out.push(word);
  }
  return out;
}

/** The real program with every action replaced by a recorder of the command path that would run. */
async function parseOnly(): Promise<{ parse(argv: string[]): Promise<string> }> {
  const program = await buildProgram();
  let ran = '';
  let errors = '';
  const visit = (command: Command, path: string[]) => {
    command.exitOverride();
    command.configureOutput({
      writeOut: () => {},
      writeErr: (text) => {
        errors += text;
      },
    });
    for (const sub of command.commands) {
      const subPath = [...path, sub.name()];
      sub.action(() => {
        ran = subPath.join(' ');
      });
      visit(sub, subPath);
    }
  };
  visit(program, []);
  return {
    async parse(argv) {
      ran = '';
      errors = '';
      try {
        await program.parseAsync(argv, { from: 'user' });
      } catch (error) {
        if (error instanceof CommanderError) throw new Error(errors.trim() || error.message);
        throw error;
      }
      return ran;
    },
  };
}

const quoted = documents.flatMap((doc) =>
  quotedCommandLines(readFileSync(join(repo, doc), 'utf8')).map(({ line, text }) => ({
    where: `${doc}:${line}`,
    text,
  })),
);

describe('command lines quoted in the documentation', () => {
  it('finds the documented commands (README, install, cli, fleet, simulator, approval)', () => {
    const where = new Set(quoted.map((q) => q.where.split(':')[0]));
    for (const doc of ['README.md', 'docs/install.md', 'docs/cli.md', 'docs/fleet.md', 'docs/simulator.md']) {
      expect(where, doc).toContain(doc);
    }
    expect(quoted.length).toBeGreaterThanOrEqual(20);
  });

  it.each(quoted)('$where: scheduled-events-forwarder $text', async ({ text }) => {
    const cli = await parseOnly();
    const argv = words(text);
    const ran = await cli.parse(argv);
    // The command the line names is the one that would run (not, e.g., a parent that swallowed the words);
    // `fleet` alone runs its default subcommand `fleet run`.
    expect(ran).not.toBe('');
    const named = ran === 'fleet run' && argv[1] !== 'run' ? 'fleet' : ran;
    expect(`${argv.join(' ')} `.startsWith(`${named} `), `${ran} for ${argv.join(' ')}`).toBe(true);
  });

  it('rejects what the CLI does not have (the check is not vacuous)', async () => {
    const cli = await parseOnly();
    await expect(cli.parse(words('config validate --no-such-flag FILE'))).rejects.toThrow(/unknown option/);
    await expect(cli.parse(words('outbox nosuch'))).rejects.toThrow(/unknown command|too many arguments/);
    await expect(cli.parse(words('config show --redacted'))).rejects.toThrow(/unknown option '--redacted'/);
  });

  it('reads usage notation as the words it stands for', () => {
    expect(words('deadletters list --state-dir … [--sink NAME] [--json]   # comment')).toEqual([
      'deadletters',
      'list',
      '--state-dir',
      'VALUE',
      '--sink',
      'NAME',
      '--json',
    ]);
    expect(words('approve <eventId…> [--dry-run] | jq .')).toEqual(['approve', 'VALUE', '--dry-run']);
  });
});

describe('the command-line options of docs/configuration.md exist on run', () => {
  const table = readFileSync(join(repo, 'docs', 'configuration.md'), 'utf8')
    .split('\n')
    .filter((l) => /^\| `--/.test(l))
    .flatMap((l) => [...l.split('|')[1]!.matchAll(/`(--[a-z-]+)(?: ([^`]+))?`/g)])
    .map((m) => [m[1]!, m[2] ?? ''] as const);

  it.each(table)('run %s %s', async (flag, value) => {
    const cli = await parseOnly();
    expect(await cli.parse(['run', flag, ...(value === '' ? [] : [value])])).toBe('run');
  });
});

describe('defaults quoted in --help are the defaults run applies', () => {
  it('run --help: every "(default X)" matches the configuration default of the key the option overrides', async () => {
    const { loadConfigForCli } = await import('../../../src/config/index.ts');
    const defaults = loadConfigForCli({ sink: ['stdout'] });
    const keyOf: Record<string, unknown> = {
      '--imds-endpoint': defaults.imds.endpoint,
      '--api-version': defaults.imds.apiVersion,
      '--poll-interval': defaults.imds.pollIntervalMs,
    };
    const run = (await buildProgram()).commands.find((c) => c.name() === 'run')!;
    const quotedDefaults = run.options.flatMap((o) => {
      const m = /\(default ([^)\s]+)\)/.exec(o.description);
      return m ? [[o.long!, m[1]!] as const] : [];
    });
    expect(quotedDefaults.map(([flag]) => flag)).toEqual(expect.arrayContaining(Object.keys(keyOf)));
    for (const [flag, quotedDefault] of quotedDefaults) {
      if (flag in keyOf) expect(quotedDefault, flag).toBe(String(keyOf[flag]));
    }
  });
});

describe('--help shows no path of this checkout', () => {
  it('no option of any command defaults to a file of the package (the release executable embeds them)', async () => {
    const program = await buildProgram();
    const repoPaths: string[] = [];
    const visit = (command: Command, path: string[]) => {
      for (const option of command.options) {
        const value = option.defaultValue as unknown;
        const values = Array.isArray(value) ? value : [value];
        for (const v of values) {
          if (typeof v === 'string' && v.includes(repo))
            repoPaths.push(`${[...path, option.long].join(' ')}: ${v}`);
        }
      }
      for (const sub of command.commands) visit(sub, [...path, sub.name()]);
    };
    visit(program, []);
    expect(repoPaths).toEqual([]);
  });
});
