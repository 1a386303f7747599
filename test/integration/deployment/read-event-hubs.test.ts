/**
 * config/compose/read-event-hubs.mjs (the compose stack's `eventhubs-reader`) reads a hub from the start and
 * prints one JSON line per event: run as a child process against the in-process AMQP double, with the same
 * emulator-style connection string form (UseDevelopmentEmulator=true) the compose file uses.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { EventHubProducerClient } from '@azure/event-hubs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EventHubsDouble, startEventHubsDouble } from '../../support/event-hubs-double/index.ts';
import { REPO } from './compose-files.ts';

const SCRIPT = join(REPO, 'config', 'compose', 'read-event-hubs.mjs');
const HUB = 'scheduled-events';

function runReader(
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SCRIPT], {
      cwd: REPO,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

let double: EventHubsDouble;

beforeAll(async () => {
  double = await startEventHubsDouble({ hubs: { [HUB]: 2 } });
  const producer = new EventHubProducerClient(double.connectionString(HUB));
  try {
    for (const id of ['a', 'b', 'c']) {
      await producer.sendBatch([{ body: { id }, properties: { 'cloudEvents:id': id } }], {
        partitionKey: 'vm-1',
      });
    }
  } finally {
    await producer.close();
  }
});

afterAll(async () => {
  await double.close();
});

describe('read-event-hubs.mjs', () => {
  it('prints every event from the earliest one, as JSON lines, and stops at EVENTHUB_READ_MAX', async () => {
    const connectionString = double.connectionString(HUB).replace(/;EntityPath=[^;]*/, '');
    expect(connectionString).toContain('UseDevelopmentEmulator=true');
    const result = await runReader({
      EVENTHUBS_CONNECTION_STRING: connectionString,
      EVENTHUB_NAME: HUB,
      EVENTHUB_READ_MAX: '3',
    });
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { body: { id: string }; partitionKey: string; properties: object });
    expect(lines.map((l) => l.body.id)).toEqual(['a', 'b', 'c']);
    expect(lines.every((l) => l.partitionKey === 'vm-1')).toBe(true);
    expect(lines[0]!.properties).toEqual({ 'cloudEvents:id': 'a' });
  }, 30_000);

  it('refuses to start without a connection string (exit 2, named)', async () => {
    const result = await runReader({});
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('EVENTHUBS_CONNECTION_STRING');
  });
});
