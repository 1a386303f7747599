#!/usr/bin/env node
/**
 * The command-line entry point. Each subcommand lives in src/cli/commands/<name>.ts and exports
 * `register(program)`. Usage and configuration errors print one clear message and exit with code 2.
 * Every command module is loaded for `--help`, so it imports only light modules at the top (commander types,
 * option helpers) and loads everything else inside its action (`await import(...)`): `--version` and `--help`
 * stay fast, and `run` loads what the configuration needs (test/integration/run/startup-imports.test.ts).
 */
import { realpathSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { redactText } from '../redact.ts';
import { UsageError } from './errors.ts';
import { nodeVersionProblem } from './node-version.ts';
import { readVersion } from './version.ts';

// First: on a Node.js without node:sqlite, say which version is needed (not "No such built-in module").
const nodeProblem = nodeVersionProblem(process.versions.node, process.execPath);
if (nodeProblem !== undefined) {
  process.stderr.write(`error: ${nodeProblem}\n`);
  process.exit(1);
}

const COMMANDS: Array<() => Promise<{ register(program: Command): void }>> = [
  () => import('./commands/config.ts'),
  () => import('./commands/run.ts'),
  () => import('./commands/demo.ts'),
  () => import('./commands/simulate.ts'),
  () => import('./commands/events.ts'),
  () => import('./commands/approve.ts'),
  () => import('./commands/outbox.ts'),
  () => import('./commands/deadletters.ts'),
  () => import('./commands/fleet.ts'),
];

export async function buildProgram(): Promise<Command> {
  const program = new Command();
  program
    .name('scheduled-events-forwarder')
    .description(
      'Polls Azure Scheduled Events (IMDS), turns every change into a CloudEvents lifecycle record, commits it ' +
        'to a durable local outbox and delivers it at-least-once to Event Hubs, webhooks and OpenTelemetry.',
    )
    .version(readVersion(), '-V, --version')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  for (const load of COMMANDS) (await load()).register(program);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  const program = await buildProgram();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end here with exitCode 0; usage errors were already printed by commander.
      return error.exitCode === 0 ? 0 : 2;
    }
    if (error instanceof UsageError) {
      process.stderr.write(redactText(`error: ${error.message}\n`));
      return 2;
    }
    process.stderr.write(redactText(`error: ${error instanceof Error ? error.message : String(error)}\n`));
    return 1;
  }
}

// No top-level await: the bundled executable is CommonJS (scripts/package/sea-main.ts calls main() itself).
const invokedDirectly = process.argv[1] !== undefined && import.meta.filename === realpathOf(process.argv[1]);
if (invokedDirectly) {
  void main(process.argv).then((code) => {
    process.exitCode = code;
  });
}

function realpathOf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}
