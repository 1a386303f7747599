/** The Windows service definition (node-windows / WinSW) — the part of the Windows install that runs anywhere. */
import { describe, expect, it } from 'vitest';
// @ts-expect-error plain ESM JavaScript shipped in packaging/, without type declarations
import { buildServiceDefinition, SERVICE_NAME } from '../../../packaging/windows/service-definition.mjs';

describe('Windows service definition', () => {
  const def = buildServiceDefinition({
    installDir: 'C:\\Program Files\\scheduled-events-forwarder',
    programData: 'C:\\ProgramData',
  });

  it('runs the installed CLI with the config and state under %ProgramData%', () => {
    expect(def.name).toBe(SERVICE_NAME);
    expect(def.script).toBe(
      'C:\\Program Files\\scheduled-events-forwarder\\node_modules\\scheduled-events-forwarder\\packaging\\windows\\service-entry.mjs',
    );
    expect(def.scriptOptions).toBe(
      'run --config C:\\ProgramData\\scheduled-events-forwarder\\forwarder.yaml --state-dir C:\\ProgramData\\scheduled-events-forwarder\\state',
    );
    expect(def.workingDirectory).toBe('C:\\ProgramData\\scheduled-events-forwarder');
  });

  it('never places state on D:, the Azure temporary disk', () => {
    expect(def.stateDir.toUpperCase().startsWith('D:')).toBe(false);
  });

  it('restarts forever and stops with Ctrl+C so deliveries drain', () => {
    expect(def.maxRetries).toBeNull();
    expect(def.maxRestarts).toBeGreaterThanOrEqual(10);
    expect(def.abortOnError).toBe(false);
    expect(def.stopparentfirst).toBe(true);
  });
});
