// Builds the Windows service definition used by packaging/windows/service.mjs (node-windows, which wraps WinSW).
// Kept pure and separate so it is unit-tested on Linux CI (test/unit/packaging/windows-service.test.ts).
import { win32 } from 'node:path';

export const SERVICE_NAME = 'scheduled-events-forwarder';

/**
 * @param {{ installDir: string, programData: string }} options
 *   installDir: where install.ps1 put the npm package (default %ProgramFiles%\scheduled-events-forwarder);
 *   programData: %ProgramData% (state and config live below it, never on the D:\ temporary disk).
 */
export function buildServiceDefinition({ installDir, programData }) {
  const dataDir = win32.join(programData, SERVICE_NAME);
  const configPath = win32.join(dataDir, 'forwarder.yaml');
  const stateDir = win32.join(dataDir, 'state');
  // node-windows' wrapper splits scriptOptions on single spaces and does no unquoting, so the paths in it can
  // neither contain spaces nor be quoted.
  for (const path of [configPath, stateDir]) {
    if (/\s|"/.test(path)) {
      throw new Error(
        `${path}: the service arguments cannot contain spaces or quotes (node-windows splits on spaces)`,
      );
    }
  }
  return {
    name: SERVICE_NAME,
    description:
      'Azure Scheduled Events forwarder: IMDS -> durable outbox -> Event Hubs, webhooks, OpenTelemetry.',
    // service-entry.mjs runs the CLI in-process and maps node-windows' IPC "shutdown" message to SIGINT.
    script: win32.join(installDir, 'node_modules', SERVICE_NAME, 'packaging', 'windows', 'service-entry.mjs'),
    // The state directory is explicit so a changed ProgramData layout never moves state silently.
    scriptOptions: `run --config ${configPath} --state-dir ${stateDir}`,
    workingDirectory: dataDir,
    // WinSW's logs (<id>.out.log, <id>.err.log with the forwarder's JSON log lines, <id>.wrapper.log) go here
    // instead of the default `daemon` folder next to the script under Program Files.
    logpath: win32.join(dataDir, 'logs'),
    env: [{ name: 'NODE_ENV', value: 'production' }],
    // Restart forever with growing delays: maxRetries null = no overall limit; maxRestarts bounds restarts
    // within 60 s (node-windows' wrapper) generously so a crash loop slows down instead of giving up.
    maxRetries: null,
    maxRestarts: 30,
    wait: 2,
    grow: 0.5,
    abortOnError: false,
    // WinSW stops the wrapper first (Ctrl+C); the wrapper then sends the IPC message "shutdown", which
    // service-entry.mjs turns into SIGINT: the forwarder drains in-flight deliveries and exits.
    stopparentfirst: true,
    dataDir,
    configPath,
    stateDir,
  };
}
