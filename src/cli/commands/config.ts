/**
 * `config validate FILE` and `config show [--config FILE] [--redacted]`. Both exit with code 2 (UsageError)
 * when the configuration is invalid, naming every offending key. `show` prints the effective configuration
 * (defaults applied) as YAML; secrets are ALWAYS redacted — `--redacted` is accepted for clarity and is the
 * default and only mode.
 */
import type { Command } from 'commander';

export function register(program: Command): void {
  const config = program.command('config').description('Check or print the forwarder configuration.');

  config
    .command('validate')
    .description('Validate a YAML config file; exit 0 when valid, 2 with every problem named otherwise.')
    .argument('<file>', 'the YAML config file')
    .action(async (file: string) => {
      const { loadConfig } = await import('../../config/index.ts');
      const loaded = loadConfig({ file });
      const sinks = loaded.sinks.map((s) => `${s.name} (${s.type}${s.enabled ? '' : ', disabled'})`);
      process.stdout.write(
        `ok: ${file} is valid; ${sinks.length === 0 ? 'no sinks' : `sinks: ${sinks.join(', ')}`}\n`,
      );
    });

  config
    .command('show')
    .description(
      'Print the effective configuration (file + options + defaults) as YAML. Secrets are always redacted.',
    )
    .option('--config <file>', 'YAML config file (without it: defaults and the options below)')
    .option('--redacted', 'redact secrets (the default and only mode; secrets are never printed)', true)
    .option('--imds-endpoint <url>', 'override imds.endpoint')
    .option('--api-version <version>', 'override imds.apiVersion')
    .option('--poll-interval <ms>', 'override imds.pollIntervalMs')
    .option('--state-dir <dir>', 'override stateDir')
    .option('--sink <spec>', 'override sinks: "stdout" or "file:PATH" (repeatable)', collect, [])
    .option('--log-level <level>', 'override log.level')
    .action(async (opts: Record<string, unknown>) => {
      const [{ loadConfigForCli, redactConfig }, { stringify }, { redactText }] = await Promise.all([
        import('../../config/index.ts'),
        import('yaml'),
        import('../../redact.ts'),
      ]);
      const loaded = loadConfigForCli(opts);
      const { value, inlineSecrets } = redactConfig(loaded);
      const header =
        `# effective configuration${loaded.configFile ? ` from ${loaded.configFile}` : ' (defaults)'}; ` +
        'secrets are always shown as [redacted: <origin>]\n';
      process.stdout.write(redactText(header + stringify(value)));
      for (const path of inlineSecrets) {
        process.stderr.write(
          `warning: ${path} is an inline secret; prefer "\${ENV_VAR}", { env: NAME } or { file: PATH }\n`,
        );
      }
    });
}

/** commander helper for repeatable options. */
export function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}
