import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ImdsClient, ImdsError } from '../../../../src/sources/imds/client.ts';
import { LIVE_MIGRATION } from '../../../support/imds-payloads.ts';
import { answer, LocalImds } from './local-imds.ts';

const imds = new LocalImds();
let client: ImdsClient;

beforeAll(async () => {
  await imds.start();
});
afterAll(async () => {
  await imds.stop();
});
afterEach(() => {
  client?.close();
  imds.requests.length = 0;
});

function newClient(options: ConstructorParameters<typeof ImdsClient>[0] = {}): ImdsClient {
  client = new ImdsClient({
    endpoint: imds.url,
    requestTimeoutMs: 2000,
    firstRequestTimeoutMs: 2000,
    ...options,
  });
  return client;
}

async function failure(promise: Promise<unknown>): Promise<ImdsError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(ImdsError);
    return error as ImdsError;
  }
  throw new Error('expected the request to fail');
}

describe('ImdsClient against a local IMDS-like server', () => {
  it('GETs scheduled events with Metadata: true and the api-version, and parses the document', async () => {
    imds.handler = (_req, res) => answer(res, 200, LIVE_MIGRATION[1]);
    const { document, body } = await newClient({ apiVersion: '2019-08-01' }).getScheduledEvents();
    expect(body).toBe(LIVE_MIGRATION[1]);
    expect(document.DocumentIncarnation).toBe(2);
    expect(document.Events[0]!.EventType).toBe('Freeze');
    const [request] = imds.requests;
    expect(request).toMatchObject({ method: 'GET', url: '/metadata/scheduledevents?api-version=2019-08-01' });
    expect(request!.headers.metadata).toBe('true');
  });

  it('an answer with the same bytes as the previous one comes back as that very answer (nothing re-parsed)', async () => {
    let body: string = LIVE_MIGRATION[1];
    imds.handler = (_req, res) => answer(res, 200, body);
    const c = newClient();
    const first = await c.getScheduledEvents();
    expect(first.raw?.toString('utf8')).toBe(body);
    const same = await c.getScheduledEvents(undefined, first);
    expect(same).toBe(first);
    // Different bytes (even the same document with other whitespace) are decoded and parsed again.
    body = `${body}\n`;
    const respaced = await c.getScheduledEvents(undefined, first);
    expect(respaced).not.toBe(first);
    expect(respaced.document).toEqual(first.document);
    body = LIVE_MIGRATION[2];
    const changed = await c.getScheduledEvents(undefined, respaced);
    expect(changed.document.DocumentIncarnation).toBe(3);
    expect(imds.requests).toHaveLength(4); // every call is a real GET
  });

  it('keeps a path prefix of the endpoint (one simulator serving many VMs)', async () => {
    imds.handler = (_req, res) => answer(res, 200, LIVE_MIGRATION[0]);
    await newClient({ endpoint: `${imds.url}/vms/vm-3` }).getScheduledEvents();
    expect(imds.requests[0]!.url).toBe('/vms/vm-3/metadata/scheduledevents?api-version=2020-07-01');
  });

  it('400 is a configuration error that shows IMDS message', async () => {
    imds.handler = (_req, res) =>
      answer(res, 400, '{"error": "Bad request. api-version was not specified or is invalid"}');
    const error = await failure(newClient().getScheduledEvents());
    expect(error).toMatchObject({ reason: 'bad-request', httpStatus: 400, retryable: false });
    expect(error.message).toContain('Bad request. api-version was not specified or is invalid');
  });

  it('404 means the endpoint is not available', async () => {
    imds.handler = (_req, res) => answer(res, 404, 'Not Found');
    const error = await failure(newClient().getScheduledEvents());
    expect(error).toMatchObject({ reason: 'not-found', httpStatus: 404, retryable: false });
    expect(error.message).toMatch(/not available.*not running on an Azure VM/);
  });

  it.each([
    [410, 'gone'],
    [500, 'server-error'],
    [503, 'server-error'],
  ] as const)('%i is retryable (%s)', async (status, reason) => {
    imds.handler = (_req, res) => answer(res, status, '{"error":"try again"}');
    const error = await failure(newClient().getScheduledEvents());
    expect(error).toMatchObject({ reason, httpStatus: status, retryable: true });
  });

  it('429 is retryable and carries Retry-After', async () => {
    imds.handler = (_req, res) => answer(res, 429, 'Too many requests', { 'Retry-After': '3' });
    const error = await failure(newClient().getScheduledEvents());
    expect(error).toMatchObject({
      reason: 'throttled',
      httpStatus: 429,
      retryable: true,
      retryAfterMs: 3000,
    });
  });

  it('an unexpected status is a failure naming the status', async () => {
    imds.handler = (_req, res) => answer(res, 302, '', { Location: 'http://example.invalid/' });
    const error = await failure(newClient().getScheduledEvents());
    expect(error).toMatchObject({ reason: 'unexpected-status', httpStatus: 302 });
  });

  it.each([
    ['an HTML page', '<html><body>Blocked by proxy</body></html>', /HTML/],
    ['truncated JSON', LIVE_MIGRATION[1].slice(0, 60), /not valid JSON/],
    ['an empty body', '', /empty body/],
  ])('a 200 with %s is an invalid-response failure with an excerpt', async (_name, body, problem) => {
    imds.handler = (_req, res) => answer(res, 200, body);
    const error = await failure(newClient().getScheduledEvents());
    expect(error.reason).toBe('invalid-response');
    expect(error.message).toMatch(problem);
    expect(error.excerpt).toBe(body.slice(0, 200));
  });

  it('uses the long timeout until IMDS answered once, then the short one', async () => {
    let hang = true;
    imds.handler = (_req, res) => {
      if (!hang) answer(res, 200, LIVE_MIGRATION[0]);
    };
    const c = newClient({ firstRequestTimeoutMs: 400, requestTimeoutMs: 150 });
    const first = await failure(c.getScheduledEvents());
    expect(first).toMatchObject({ reason: 'timeout', retryable: true });
    expect(first.message).toContain('within 400 ms');
    hang = false;
    await c.getScheduledEvents();
    hang = true;
    const later = await failure(c.getScheduledEvents());
    expect(later.message).toContain('within 150 ms');
  });

  it('a connection reset is a retryable network failure', async () => {
    imds.handler = (_req, _res, raw) => raw.socket.destroy();
    const error = await failure(newClient().getScheduledEvents());
    expect(error).toMatchObject({ reason: 'network', retryable: true });
  });

  it('a connection that breaks in the middle of the body is a network failure, not a document', async () => {
    imds.handler = (_req, res, raw) => {
      res.writeHead(200, { 'Content-Length': '500' });
      res.write(LIVE_MIGRATION[1].slice(0, 50));
      setImmediate(() => raw.socket.destroy());
    };
    const error = await failure(newClient().getScheduledEvents());
    expect(error).toMatchObject({ reason: 'network', retryable: true });
  });

  it('a refused connection is a retryable network failure', async () => {
    const error = await failure(new ImdsClient({ endpoint: 'http://127.0.0.1:1' }).getScheduledEvents());
    expect(error).toMatchObject({ reason: 'network', retryable: true });
    expect(error.message).toContain('ECONNREFUSED');
  });

  it('an AbortSignal cancels a hanging request', async () => {
    imds.handler = () => {};
    const controller = new AbortController();
    const pending = newClient().getScheduledEvents(controller.signal);
    controller.abort();
    const error = await failure(pending);
    expect(error).toMatchObject({ reason: 'aborted', retryable: false });
  });

  it('reuses kept-alive connections and retries a GET once when a reused connection was closed', async () => {
    let calls = 0;
    imds.handler = (_req, res, raw) => {
      calls += 1;
      if (calls === 2) raw.socket.destroy();
      else answer(res, 200, LIVE_MIGRATION[0]);
    };
    const c = newClient();
    await c.getScheduledEvents();
    const { document } = await c.getScheduledEvents();
    expect(document.DocumentIncarnation).toBe(1);
    expect(calls).toBe(3);
  });

  it('approves several events in one POST', async () => {
    imds.handler = (_req, res) => answer(res, 200, '');
    await newClient().approve(['C7061BAC-AFDC-4513-B24B-AA5F13A16123', 'other-id']);
    const [request] = imds.requests;
    expect(request).toMatchObject({
      method: 'POST',
      url: '/metadata/scheduledevents?api-version=2020-07-01',
    });
    expect(request!.headers.metadata).toBe('true');
    expect(request!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(request!.body)).toEqual({
      StartRequests: [{ EventId: 'C7061BAC-AFDC-4513-B24B-AA5F13A16123' }, { EventId: 'other-id' }],
    });
  });

  it('a rejected approval is a bad-request error with IMDS message', async () => {
    imds.handler = (_req, res) => answer(res, 400, '{"error":"Bad request. StartRequests is missing"}');
    const error = await failure(newClient().approve(['x']));
    expect(error).toMatchObject({ reason: 'bad-request', httpStatus: 400 });
    expect(error.message).toContain('StartRequests is missing');
  });

  it('fetches the VM identity from instance metadata', async () => {
    imds.handler = (_req, res) =>
      answer(
        res,
        200,
        JSON.stringify({ compute: { name: 'vm-3', vmId: 'id-3', osProfile: { computerName: 'h3' } } }),
      );
    const identity = await newClient().getInstanceMetadata();
    expect(identity).toMatchObject({ name: 'vm-3', vmId: 'id-3', computerName: 'h3', zone: '' });
    expect(imds.requests[0]!.url).toBe('/metadata/instance?api-version=2021-02-01');
    expect(imds.requests[0]!.headers.metadata).toBe('true');
  });
});
