/**
 * `config validate [FILE | --config FILE] [--allow-missing-secrets]` and `config show [--config FILE]`. Both
 * exit with code 2 (UsageError) when the configuration is invalid, naming every offending key. `validate` runs
 * the same checks `run` does before it touches the network (the schema: secrets, sink options, templates, the
 * temporary-disk refusal; then the start checks of src/pipeline/start-checks.ts, the environment and the state
 * directory included) and prints, on stderr, every warning `run` would log at start-up (configWarnings:
 * no sinks, inline secrets, a retired Teams connector URL, an exec or hook command not found on this machine's
 * PATH, ...); warnings alone keep exit code 0. `show` prints the effective configuration `run` would use (the same defaults,
 * including the stdout sink when neither a file nor --sink is given) as YAML; secrets are always redacted.
 */
import type { Command } from 'commander';
import { UsageError } from '../../errors.ts';

interface ValidateOptions {
  config?: string;
  allowMissingSecrets?: boolean;
}

/** Problems caused by a secret that is not available here (see resolveSecret's messages). */
const SECRET_NOT_AVAILABLE = /referenced as a secret|secret file/;

export function register(program: Command): void {
  const config = program.command('config').description('Check or print the forwarder configuration.');

  config
    .command('validate')
    .description(
      'Validate a YAML config file with the checks run makes before it uses the network; exit 0 when valid, ' +
        '2 with every problem named otherwise.',
    )
    .argument('[file]', 'the YAML config file (or --config FILE)')
    .option('--config <file>', 'the YAML config file (same as the argument)')
    .option(
      '--allow-missing-secrets',
      'check secrets whose environment variable is unset or whose file is unreadable here only in form, and ' +
        'list them instead of failing (for CI jobs and admin shells without the service environment)',
    )
    .action(async (fileArgument: string | undefined, opts: ValidateOptions) => {
      if (fileArgument !== undefined && opts.config !== undefined && fileArgument !== opts.config) {
        throw new UsageError(
          `two different config files given (${fileArgument} and --config ${opts.config})`,
        );
      }
      const file = fileArgument ?? opts.config;
      if (file === undefined) throw new UsageError('config validate needs a file: config validate FILE');
      const { ConfigError, loadConfig, missingSecrets } = await import('../../config/index.ts');
      const allowMissingSecrets = opts.allowMissingSecrets === true;
      let loaded: ReturnType<typeof loadConfig>;
      try {
        loaded = loadConfig({ file, allowMissingSecrets });
      } catch (error) {
        // A fleet consumer's file: say so and name the command that checks it (six "unknown key" lines alone do not).
        const { configKindHint } = await import('../config-kind.ts');
        const kind = error instanceof ConfigError ? configKindHint(file, 'forwarder') : undefined;
        if (kind !== undefined && error instanceof ConfigError) {
          throw new ConfigError(error.message.split('\n')[0] ?? 'invalid configuration:', [
            ...error.problems,
            kind,
          ]);
        }
        if (
          !allowMissingSecrets &&
          error instanceof ConfigError &&
          error.problems.some((p) => SECRET_NOT_AVAILABLE.test(p))
        ) {
          throw new ConfigError(error.message.split('\n')[0] ?? 'invalid configuration:', [
            ...error.problems,
            "hint: to check the file where the service's secrets are not available, add --allow-missing-secrets",
          ]);
        }
        throw error;
      }
      // What `run` refuses before its first poll beyond the schema (one function: src/pipeline/start-checks.ts).
      const { assertStartable } = await import('../../pipeline/start-checks.ts');
      await assertStartable(loaded);
      // The same warnings `run` logs at start-up (one function: src/config/warnings.ts).
      const { configWarnings } = await import('../../config/warnings.ts');
      const warnings = configWarnings(loaded);
      for (const warning of warnings) process.stderr.write(`warning: ${warning.message}\n`);
      const sinks = loaded.sinks.map((s) => `${s.name} (${s.type}${s.enabled ? '' : ', disabled'})`);
      const withWarnings =
        warnings.length === 0
          ? ''
          : ` with ${warnings.length} warning${warnings.length === 1 ? '' : 's'} (on stderr)`;
      process.stdout.write(
        `ok: ${file} is valid${withWarnings}; ${sinks.length === 0 ? 'no sinks' : `sinks: ${sinks.join(', ')}`}\n`,
      );
      for (const missing of missingSecrets(loaded)) {
        process.stdout.write(
          `not checked: ${missing.path} (${missing.origin}): ${missing.reason}; only its form was checked\n`,
        );
      }
    });

  config
    .command('show')
    .description(
      'Print the effective configuration run would use (file + options + defaults) as YAML. Secrets are ' +
        'always redacted.',
    )
    .option(
      '--config <file>',
      'YAML config file (without it and without --sink: defaults and the stdout sink)',
    )
    .option('--imds-endpoint <url>', 'override imds.endpoint')
    .option('--api-version <version>', 'override imds.apiVersion')
    .option('--poll-interval <ms>', 'override imds.pollIntervalMs')
    .option('--state-dir <dir>', 'override stateDir')
    .option('--sink <spec>', 'override sinks: "stdout" or "file:PATH" (repeatable)', collect, [])
    .option('--log-level <level>', 'override log.level')
    .action(async (opts: Record<string, unknown>) => {
      const [{ redactConfig }, { configWarnings }, { runConfig }, { stringify }, { redactText }] =
        await Promise.all([
          import('../../config/index.ts'),
          import('../../config/warnings.ts'),
          import('./run.ts'),
          import('yaml'),
          import('../../redact.ts'),
        ]);
      // The same loading `run` does (without a file and without --sink, records go to stdout).
      const loaded = await runConfig(opts);
      const { value } = redactConfig(loaded);
      const header =
        `# effective configuration${loaded.configFile ? ` from ${loaded.configFile}` : ' (defaults; no --config)'}; ` +
        'secrets are always shown as [redacted: <origin>]\n';
      process.stdout.write(redactText(header + stringify(value)));
      // The warnings `run` logs and `config validate` prints (inline secrets among them).
      for (const warning of configWarnings(loaded)) process.stderr.write(`warning: ${warning.message}\n`);
    });
}

/** commander helper for repeatable options. */
export function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}
