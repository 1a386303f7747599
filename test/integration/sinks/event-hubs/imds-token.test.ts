/**
 * Managed identity tokens for Event Hubs heartbeats over REST (src/sinks/event-hubs/imds-token.ts) from the IMDS
 * simulator's token endpoint: the documented request (Metadata: true, api-version, resource, client_id /
 * msi_res_id, per-VM path prefix), the cache until shortly before expiry, and refusals that name the fix without
 * the answer's text.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeJwtPayload, type RunningSimulator, startSimulator } from '../../../../src/simulator/index.ts';
import {
  EVENT_HUBS_RESOURCE,
  ImdsTokenSource,
  identityTokenUrl,
  parseTokenAnswer,
} from '../../../../src/sinks/event-hubs/imds-token.ts';
import { DeliveryError } from '../../../../src/sinks/types.ts';
import { live } from './helpers.ts';

let sim: RunningSimulator;
beforeAll(async () => {
  sim = await startSimulator({ port: 0 });
});
afterAll(async () => {
  await sim?.close();
});

const tokenRequests = () => sim.admin.requests().log.filter((e) => e.endpoint === 'token');

describe('identityTokenUrl and parseTokenAnswer', () => {
  it('builds the IMDS token request for the Event Hubs audience, under a path prefix', () => {
    expect(identityTokenUrl('http://169.254.169.254', {}).href).toBe(
      'http://169.254.169.254/metadata/identity/oauth2/token?api-version=2018-02-01&resource=https%3A%2F%2Feventhubs.azure.net%2F',
    );
    const url = identityTokenUrl('http://127.0.0.1:9/vms/vm-3/', { clientId: 'c-1' });
    expect(url.pathname).toBe('/vms/vm-3/metadata/identity/oauth2/token');
    expect(url.searchParams.get('client_id')).toBe('c-1');
    expect(
      identityTokenUrl('http://h', { resourceId: '/subscriptions/s/x' }).searchParams.get('msi_res_id'),
    ).toBe('/subscriptions/s/x');
  });

  it('reads access_token and expires_on, or says what is missing', () => {
    expect(parseTokenAnswer('{"access_token":"t","expires_on":"1700000000"}')).toEqual({
      token: 't',
      expiresAtMs: 1_700_000_000_000,
    });
    expect(parseTokenAnswer('nope')).toBe('the answer is not JSON');
    expect(parseTokenAnswer('{"expires_on":"1"}')).toBe('the answer has no access_token');
    expect(parseTokenAnswer('{"access_token":"t"}')).toBe('the answer has no expires_on');
  });
});

describe('ImdsTokenSource against the IMDS simulator', () => {
  it('gets a token for https://eventhubs.azure.net/ of the named identity and reuses it until shortly before expiry', async () => {
    let now = Date.now();
    const source = new ImdsTokenSource(sim.vmUrl('vm-mi'), { clientId: 'user-assigned-1' }, () => now);
    const before = tokenRequests().length;
    const token = await source.token(live(), 5000);
    const claims = decodeJwtPayload(token);
    expect(claims.aud).toBe(EVENT_HUBS_RESOURCE);
    expect(claims.appid).toBe('user-assigned-1');
    expect(await source.token(live(), 5000)).toBe(token);
    expect(tokenRequests().length).toBe(before + 1);
    // The simulator's tokens live a day: five minutes before the end a new one is fetched.
    now += 86_399_000 - 4 * 60_000;
    await source.token(live(), 5000);
    expect(tokenRequests().length).toBe(before + 2);
  });

  describe('refusals', () => {
    let server: Server;
    let answer: { status: number; body: string } = { status: 200, body: '{}' };
    beforeAll(async () => {
      server = createServer((_req, res) => {
        res.writeHead(answer.status, { 'content-type': 'application/json' });
        res.end(answer.body);
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    });
    afterAll(async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });
    const endpoint = () => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const failure = async () =>
      new ImdsTokenSource(endpoint(), {}).token(live(), 5000).then(
        () => undefined,
        (e: unknown) => e as DeliveryError,
      );

    it('no such identity: permanent, names the fix, never quotes the answer', async () => {
      answer = {
        status: 400,
        body: '{"error":"invalid_request","error_description":"Identity not found eyJzZWNyZXQiOiJ4In0.x.y"}',
      };
      const error = await failure();
      expect(error).toBeInstanceOf(DeliveryError);
      expect(error!.retryable).toBe(false);
      expect(error!.message).toMatch(/HTTP 400 .*fix: assign one to the VM/);
      expect(error!.message).not.toContain('eyJ');
    });

    it('IMDS busy (5xx) is retryable; an answer without a token says so without quoting it', async () => {
      answer = { status: 503, body: 'busy' };
      expect((await failure())!.retryable).toBe(true);
      answer = { status: 200, body: '{"token":"eyJzZWNyZXQiOiJ4In0.x.y"}' };
      const error = await failure();
      expect(error!.message).toMatch(/no access_token/);
      expect(error!.message).not.toContain('eyJ');
    });
  });
});
