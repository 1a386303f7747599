/**
 * The heartbeat's configuration digest (issue 33 item 1: "a digest of the effective configuration, never a
 * secret"): computed over the configuration with every secret redacted, so two forwarders that differ only in a
 * secret (an Event Hubs connection string, a webhook URL) send the same digest
 * — no secret and no hash of one leaves the VM — while any other setting changes it.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.ts';
import { configDigest } from '../../../src/telemetry/heartbeat.ts';

const KEY = 'SharedAccessKeyName=send;SharedAccessKey';
const hub = (key: string) => `Endpoint=sb://ns.servicebus.windows.net/;${KEY}=${key};EntityPath=maintenance`;

function digestOf(options: { key: string; webhook: string; pollIntervalMs?: number }): string {
  const config = loadConfig({
    overrides: {
      stateDir: '/var/lib/sef',
      imds: { pollIntervalMs: options.pollIntervalMs ?? 1000 },
      sinks: [
        { name: 'hub', type: 'eventhubs', connectionString: hub(options.key) },
        { name: 'hook', type: 'webhook', url: options.webhook },
      ],
    },
  });
  return configDigest(config);
}

describe('the heartbeat configuration digest', () => {
  it('is the same whatever the secrets, and changes with any other setting', () => {
    const a = digestOf({ key: 'c2VjcmV0LW9uZQ==', webhook: 'https://hooks.example.net/T000/one-token' });
    const b = digestOf({ key: 'c2VjcmV0LXR3bw==', webhook: 'https://hooks.example.net/T000/two-token' });
    expect(a).toMatch(/^sha256:[0-9a-f]{16}$/);
    expect(b).toBe(a);
    expect(
      digestOf({
        key: 'c2VjcmV0LW9uZQ==',
        webhook: 'https://hooks.example.net/T000/one-token',
        pollIntervalMs: 2000,
      }),
    ).not.toBe(a);
  });
});
