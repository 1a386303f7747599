#!/usr/bin/env node
/**
 * The command-line entry point. Each subcommand lives in src/cli/commands/<name>.ts and exports
 * `register(program)`. Usage and configuration errors print one clear message and exit with code 2.
 * When the first argument names a command, only that command's module is loaded (`run` starts without
 * parsing the other eight); otherwise (`--help`, `--version`, `help`, a typo) every module is loaded so help and
 * suggestions list them all. A command module imports only light modules at the top (commander types, option
 * helpers) and loads everything else inside its action (`await import(...)`): `--version` and `--help` stay
 * fast, and `run` loads what the configuration needs (test/integration/cli/startup-imports.test.ts). The top-level
 * help also loads the sink registry (light factories), to list every sink type.
 * `run` also sizes V8's heap for a long-lived small process (./heap.ts) and sends its first Scheduled Events GET
 * (./first-poll.ts) before anything else is loaded: this file's static imports are light on purpose, and
 * commander itself loads after that.
 */
import type { Command } from 'commander';
import { errorMessage, UsageError } from '../errors.ts';
import { redactText } from '../redact.ts';
import { readVersion } from '../version.ts';
import { sendFirstPoll } from './first-poll.ts';
import { sizeHeapForLongRun } from './heap.ts';
import { nodeVersionProblem } from './node-version.ts';
import { loadZodInEnglishOnly } from './zod-locales.ts';

const { realpathSync } = process.getBuiltinModule('node:fs');

// First: on a Node.js without node:sqlite, say which version is needed (not "No such built-in module").
const nodeProblem = nodeVersionProblem(process.versions.node, process.execPath);
if (nodeProblem !== undefined) {
  process.stderr.write(`error: ${nodeProblem}\n`);
  process.exit(1);
}

type CommandModule = () => Promise<{ register(program: Command): void }>;

/** Every command, in the order `--help` lists them. */
const COMMANDS: Record<string, CommandModule> = {
  config: () => import('./commands/config.ts'),
  run: () => import('./commands/run.ts'),
  demo: () => import('./commands/demo.ts'),
  simulate: () => import('./commands/simulate.ts'),
  events: () => import('./commands/events.ts'),
  approve: () => import('./commands/approve.ts'),
  outbox: () => import('./commands/outbox.ts'),
  deadletters: () => import('./commands/deadletters.ts'),
  fleet: () => import('./commands/fleet.ts'),
};

/** The command named by the first argument (`argv[2]`), or undefined when it is an option or unknown. */
export function requestedCommand(argv: readonly string[]): string | undefined {
  const first = argv[2];
  return first !== undefined && Object.hasOwn(COMMANDS, first) ? first : undefined;
}

/**
 * The program's description: what it does and, when `sinkTypes` are given (the top-level help: see main), every
 * sink type of the registry.
 */
export function programDescription(sinkTypes?: readonly string[]): string {
  const to =
    sinkTypes === undefined
      ? 'its sinks'
      : `its sinks (types: ${sinkTypes.join(', ')}; docs/configuration.md)`;
  return (
    'Polls Azure Scheduled Events (IMDS), turns every change into a CloudEvents lifecycle record, commits it ' +
    `to a durable local outbox and delivers it at-least-once to ${to}.`
  );
}

/** The program with `only` these commands registered (default: every command). */
export async function buildProgram(
  only?: readonly string[],
  sinkTypes?: readonly string[],
): Promise<Command> {
  const { Command } = await import('commander');
  const program = new Command();
  program
    .name('scheduled-events-forwarder')
    .description(programDescription(sinkTypes))
    .version(readVersion(), '-V, --version')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  for (const [name, load] of Object.entries(COMMANDS)) {
    if (only === undefined || only.includes(name)) (await load()).register(program);
  }
  return program;
}

/**
 * The long-running services: `run` and `fleet run` (fleet's default subcommand). Their stdout going away is not
 * "the reader has seen enough": run's stdout sink treats a failed write as a retryable delivery, and a service
 * must not end with success behind its supervisor's back.
 */
export function isService(argv: readonly string[]): boolean {
  const [command, sub] = argv.slice(2);
  if (argv.includes('--help') || argv.includes('-h')) return false;
  if (command === 'run') return true;
  return command === 'fleet' && (sub === undefined || sub === 'run' || sub.startsWith('-'));
}

/**
 * Every other command prints a list, a document or a status: when the reader of stdout closes early
 * (`... | head -1`), the next write fails with EPIPE; the command then ends quietly with exit code 0, like
 * any Unix tool, instead of crashing with a stack trace. Other stdout errors stay fatal.
 */
export function exitQuietlyWhenStdoutCloses(stdout: NodeJS.WriteStream = process.stdout): void {
  stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0);
    throw error;
  });
}

export async function main(argv: string[]): Promise<number> {
  loadZodInEnglishOnly();
  const command = requestedCommand(argv);
  if (command === 'run') {
    sizeHeapForLongRun();
    await sendFirstPoll(argv.slice(3));
  }
  if (!isService(argv)) exitQuietlyWhenStdoutCloses();
  // The top-level help lists every sink type: the registry (light factories) loads for it, not for --version.
  const args = argv.slice(2);
  const topLevelHelp =
    command === undefined &&
    (args.length === 0 || args[0] === 'help' || args.includes('--help') || args.includes('-h'));
  const sinkTypes = topLevelHelp
    ? (await import('../sinks/registry.ts')).SINK_FACTORIES.map((f) => f.type)
    : undefined;
  const program = await buildProgram(command === undefined ? undefined : [command], sinkTypes);
  const { CommanderError } = await import('commander');
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
    process.stderr.write(redactText(`error: ${errorMessage(error)}\n`));
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
