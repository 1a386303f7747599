/**
 * The entry point's early first Scheduled Events GET (src/sources/imds/first-request.ts), against a real HTTP
 * server: the IMDS client for the same URL takes it over (one request on the wire, its answer is the first
 * poll's), a client for another URL discards it and sends its own, the client's first-request timeout applies
 * to the taken-over request, and an early request nobody takes does not keep a process alive.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ImdsClient } from '../../../../src/sources/imds/client.ts';
import { sendFirstRequest, takeFirstRequest } from '../../../../src/sources/imds/first-request.ts';
import { ImdsError } from '../../../../src/sources/imds-protocol/errors.ts';
import { waitFor } from '../../../support/wait.ts';

const DOCUMENT = '{"DocumentIncarnation":3,"Events":[]}';
const servers: Server[] = [];
afterEach(async () => {
  takeFirstRequest('none'); // discards a request a test left behind
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** A server that logs request paths; `answer` false: it never answers. */
async function server(answer = true): Promise<{ url: string; paths: string[] }> {
  const paths: string[] = [];
  const s = createServer((req: IncomingMessage, res: ServerResponse) => {
    paths.push(req.url ?? '');
    if (!answer) return;
    res.setHeader('content-type', 'application/json');
    res.end(DOCUMENT);
  });
  servers.push(s);
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  return { url: `http://127.0.0.1:${(s.address() as AddressInfo).port}`, paths };
}

describe('first request', () => {
  it('is taken over by the client for the same URL: one GET on the wire, its answer is the first', async () => {
    const imds = await server();
    expect(await sendFirstRequest(imds.url)).toBe(true);
    await waitFor(() => imds.paths.length === 1, 'the early GET at the server'); // it has left
    expect(imds.paths).toEqual(['/metadata/scheduledevents?api-version=2020-07-01']);
    const client = new ImdsClient({ endpoint: imds.url });
    const answer = await client.getScheduledEvents();
    expect(answer.document.DocumentIncarnation).toBe(3);
    expect(imds.paths).toHaveLength(1);
    await client.getScheduledEvents(undefined, answer); // later polls go out as usual, on the same agent
    expect(imds.paths).toHaveLength(2);
    client.close();
  });

  it('is discarded by a client for another URL, which sends its own', async () => {
    const early = await server();
    const configured = await server();
    expect(await sendFirstRequest(early.url, '2019-08-01')).toBe(true);
    const client = new ImdsClient({ endpoint: configured.url });
    expect((await client.getScheduledEvents()).document.DocumentIncarnation).toBe(3);
    expect(configured.paths).toEqual(['/metadata/scheduledevents?api-version=2020-07-01']);
    await waitFor(() => early.paths.length === 1, 'the early GET at its server');
    client.close();
  });

  it('is not sent for an invalid endpoint', async () => {
    expect(await sendFirstRequest('ftp://127.0.0.1:1')).toBe(false);
    expect(
      takeFirstRequest('ftp://127.0.0.1:1/metadata/scheduledevents?api-version=2020-07-01'),
    ).toBeUndefined();
  });

  it("gets the client's first-request timeout once taken over", async () => {
    const imds = await server(false);
    expect(await sendFirstRequest(imds.url)).toBe(true);
    const client = new ImdsClient({ endpoint: imds.url, firstRequestTimeoutMs: 50 });
    const error = await client.getScheduledEvents().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ImdsError);
    expect((error as ImdsError).reason).toBe('timeout');
    await waitFor(() => imds.paths.length === 1, 'the early GET at the server');
    client.close();
  });

  it('does not keep a process alive while nobody has taken it', async () => {
    const imds = await server(false);
    const module = join(import.meta.dirname, '../../../../src/sources/imds/first-request.ts');
    const child = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const m = await import(${JSON.stringify(module)}); console.log(await m.sendFirstRequest(${JSON.stringify(imds.url)}));`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
    });
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(out.trim()).toBe('true');
    expect(code).toBe(0);
    await waitFor(() => imds.paths.length === 1, 'the early GET at the server'); // sent, never answered
  });
});
