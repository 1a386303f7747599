/**
 * The simulator's HTTP handler: IMDS paths (scheduled events GET/POST, instance metadata, managed identity
 * token) at the root for the primary VM and under /vms/<name>/ for any other VM identity, with IMDS's
 * request rules and the configured faults, plus the JSON admin API under /admin.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Clock, sleep } from '../clock.ts';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { RequestLogEntry, SimulatorAdmin } from './admin.ts';
import { parseDuration } from './clock.ts';
import type { FaultController } from './faults.ts';
import { instanceDocument, tokenResponse } from './identity.ts';
import type { SimulatorState } from './state.ts';
import {
  IDENTITY_API_VERSIONS,
  INSTANCE_API_VERSIONS,
  newestVersions,
  SCHEDULED_EVENTS_API_VERSIONS,
} from './versions.ts';

const MAX_BODY_BYTES = 1024 * 1024;
const JSON_TYPE = 'application/json; charset=utf-8';

/** An HTTP answer before faults spoil it. */
interface Answer {
  status: number;
  body: string;
  headers?: Record<string, string>;
}

export interface HandlerDeps {
  state: SimulatorState;
  faults: FaultController;
  admin: SimulatorAdmin;
  sync(): void;
  record(entry: Omit<RequestLogEntry, 'seq' | 'at'>): void;
  logger: Logger;
  /** Real time for injected latency (not simulated time). */
  realClock: Clock;
}

const json = (status: number, value: unknown, headers?: Record<string, string>): Answer => ({
  status,
  body: JSON.stringify(value),
  ...(headers ? { headers } : {}),
});

/** The IMDS-like error for a missing or unknown api-version. */
function badApiVersion(given: string | null, versions: readonly string[]): Answer {
  return json(400, {
    error: given
      ? `Bad request. api-version '${given}' is invalid. For more information refer to aka.ms/azureimds`
      : 'Bad request. api-version was not specified in the request. For more information refer to aka.ms/azureimds',
    'newest-versions': newestVersions(versions),
  });
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error('request body too large'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, answer: Answer): void {
  const body = Buffer.from(answer.body, 'utf8');
  res.writeHead(answer.status, {
    'Content-Type': answer.headers?.['Content-Type'] ?? JSON_TYPE,
    'Content-Length': String(body.length),
    Server: 'Microsoft-IIS/10.0 (scheduled-events-forwarder simulator)',
    ...answer.headers,
  });
  res.end(body);
}

type Endpoint = RequestLogEntry['endpoint'];

function endpointOf(path: string): Endpoint {
  const p = path.toLowerCase().replace(/\/+$/, '');
  if (p === '/metadata/scheduledevents') return 'scheduledevents';
  if (p === '/metadata/instance' || p === '/metadata/instance/compute') return 'instance';
  if (p === '/metadata/identity/oauth2/token') return 'token';
  return 'other';
}

/** Creates the request handler. */
export function createHandler(deps: HandlerDeps): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    handle(deps, req, res).catch((error: unknown) => {
      deps.logger.error({ err: error }, 'simulator request failed');
      if (!res.headersSent) send(res, json(500, { error: 'simulator internal error' }));
      else res.destroy();
    });
  };
}

async function handle(deps: HandlerDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://simulator.invalid');
  const method = req.method ?? 'GET';
  let path = url.pathname;
  let vmName = deps.state.primaryVmName;
  const vmMatch = /^\/vms\/([^/]+)(\/.*)?$/.exec(path);
  if (vmMatch?.[1]) {
    vmName = decodeURIComponent(vmMatch[1]);
    path = vmMatch[2] ?? '/';
  } else if (path === '/admin' || path.startsWith('/admin/')) {
    const answer = await handleAdmin(deps, method, path, url, req);
    send(res, answer);
    deps.record({ method, path: url.pathname, vm: '', endpoint: 'admin', status: answer.status, faults: [] });
    return;
  }
  const found = endpointOf(path);
  const log = (status: number | null, faults: string[]) =>
    deps.record({ method, path: url.pathname + url.search, vm: vmName, endpoint: found, status, faults });
  if (found === 'other' || found === 'admin') {
    send(res, json(404, { error: 'Not found' }));
    log(404, []);
    return;
  }
  const endpoint = found;
  deps.sync();
  const decision = deps.faults.decide({ vm: vmName, endpoint, method });
  if (decision.delayMs > 0) await sleep(deps.realClock, decision.delayMs);
  const terminal = decision.terminal;
  if (terminal?.kind === 'reset') {
    log(null, decision.applied);
    req.socket.destroy();
    return;
  }
  if (terminal?.kind === 'hang') {
    log(null, decision.applied);
    return; // never answer; close() destroys the connection
  }
  if (terminal?.kind === 'status') {
    const headers: Record<string, string> = {};
    if (terminal.retryAfterSeconds !== undefined) headers['Retry-After'] = String(terminal.retryAfterSeconds);
    const message = terminal.status === 429 ? 'Too many requests' : `Simulated HTTP ${terminal.status}`;
    send(res, json(terminal.status, { error: message }, headers));
    log(terminal.status, decision.applied);
    return;
  }
  if (terminal?.kind === 'html') {
    const page =
      '<!DOCTYPE html><html><head><title>Access Denied</title></head><body><h1>Proxy Error</h1>' +
      '<p>The requested URL could not be retrieved.</p></body></html>';
    send(res, { status: 200, body: page, headers: { 'Content-Type': 'text/html; charset=utf-8' } });
    log(200, decision.applied);
    return;
  }
  if (terminal?.kind === 'raw-body') {
    const bytes = Buffer.from(terminal.bodyBase64, 'base64');
    res.writeHead(200, { 'Content-Type': JSON_TYPE, 'Content-Length': String(bytes.length) });
    res.end(bytes);
    log(200, decision.applied);
    return;
  }
  const body = method === 'POST' ? await readBody(req) : '';
  const answer = handleImds(deps, endpoint, method, vmName, url, req, body);
  deps.sync();
  if (terminal?.kind === 'truncated-json')
    answer.body = answer.body.slice(0, Math.max(1, Math.floor(answer.body.length / 2)));
  if (terminal?.kind === 'empty-body') answer.body = '';
  if (terminal?.kind === 'bom') answer.body = `\ufeff${answer.body}`;
  send(res, answer);
  log(answer.status, decision.applied);
}

function handleImds(
  deps: HandlerDeps,
  endpoint: Exclude<Endpoint, 'admin' | 'other'>,
  method: string,
  vmName: string,
  url: URL,
  req: IncomingMessage,
  body: string,
): Answer {
  const { state } = deps;
  if (req.headers['x-forwarded-for'] !== undefined) {
    return json(400, {
      error: 'Bad request. The request must not contain an X-Forwarded-For header (no proxies).',
    });
  }
  const metadata = req.headers.metadata;
  if (typeof metadata !== 'string' || metadata.toLowerCase() !== 'true') {
    return endpoint === 'token'
      ? json(400, { error: 'invalid_request', error_description: 'Required metadata header not specified' })
      : json(400, { error: 'Bad request. Required metadata header not specified' });
  }
  const apiVersion = url.searchParams.get('api-version');
  const versions =
    endpoint === 'scheduledevents'
      ? SCHEDULED_EVENTS_API_VERSIONS
      : endpoint === 'instance'
        ? INSTANCE_API_VERSIONS
        : IDENTITY_API_VERSIONS;
  if (!apiVersion || !(versions as readonly string[]).includes(apiVersion))
    return badApiVersion(apiVersion, versions);
  const vm = state.ensureVm(vmName);

  if (endpoint === 'instance') {
    if (method !== 'GET') return json(405, { error: 'Method not allowed' });
    const doc = instanceDocument(vm);
    return json(200, url.pathname.toLowerCase().endsWith('/compute') ? doc.compute : doc);
  }
  if (endpoint === 'token') {
    if (method !== 'GET') return json(405, { error: 'Method not allowed' });
    const resource = url.searchParams.get('resource');
    if (!resource) {
      return json(400, {
        error: 'invalid_request',
        error_description: "Required query variable 'resource' is missing",
      });
    }
    return json(200, tokenResponse(vm, resource, url.searchParams.get('client_id') ?? undefined));
  }
  if (method === 'GET') return json(200, state.document(vmName, apiVersion));
  if (method !== 'POST') return json(405, { error: 'Method not allowed' });
  return approve(state, vmName, body);
}

/** POST StartRequests: 200 for known EventIds (also already approved), 400 for malformed bodies. */
function approve(state: SimulatorState, vmName: string, body: string): Answer {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return json(400, { error: 'Bad request. The request body is not valid JSON.' });
  }
  const requests = (parsed as { StartRequests?: unknown } | null)?.StartRequests;
  if (!Array.isArray(requests)) {
    return json(400, { error: 'Bad request. The request body must contain a StartRequests list.' });
  }
  const ids: string[] = [];
  for (const item of requests) {
    const id = (item as { EventId?: unknown } | null)?.EventId;
    if (typeof id !== 'string' || id === '') {
      return json(400, { error: 'Bad request. Every StartRequests entry needs an EventId string.' });
    }
    ids.push(id);
  }
  const { unknown } = state.approve(vmName, ids);
  if (unknown.length > 0) return json(400, { error: `Bad request. Unknown EventId: ${unknown.join(', ')}` });
  return { status: 200, body: '' };
}

/** One admin request, parsed: the event or VM id from the path (`:id`), the JSON body and the query. */
interface AdminRequest {
  admin: SimulatorAdmin;
  state: SimulatorState;
  id: string;
  body: unknown;
  /** The body as an object (an empty one for a `null` body). */
  fields: Record<string, unknown>;
  query: URLSearchParams;
}

/** An admin route's handler; what it throws becomes a 400 (404 for an unknown EventId). */
type AdminRoute = (request: AdminRequest) => Answer;

const ok = (): Answer => json(200, { ok: true });

function adminState({ admin, state }: AdminRequest): Answer {
  return json(200, {
    now: new Date(admin.now()).toISOString(),
    primaryVm: state.primaryVmName,
    vms: admin.vms(),
    events: admin.events(),
    approvals: admin.approvals(),
    faults: admin.faults(),
    scenarioDone: admin.scenarioDone(),
  });
}

function setEventStatus({ admin, id, fields }: AdminRequest): Answer {
  if (fields.status !== 'Scheduled' && fields.status !== 'Started')
    throw new RangeError('status must be Scheduled or Started');
  admin.setStatus(id, fields.status);
  return ok();
}

/** To `notBefore` (absolute), else `noticeSeconds` from now. */
function rescheduleEvent({ admin, id, fields }: AdminRequest): Answer {
  const target =
    typeof fields.notBefore === 'string' || typeof fields.notBefore === 'number'
      ? fields.notBefore
      : admin.now() + parseDuration(fields.noticeSeconds as string | number, 'noticeSeconds');
  admin.reschedule(id, target);
  return ok();
}

/** By `ms`, else by the duration `by` (or `seconds`). */
function advanceTime({ admin, fields }: AdminRequest): Answer {
  const ms =
    typeof fields.ms === 'number'
      ? fields.ms
      : parseDuration((fields.by ?? fields.seconds) as string | number, 'advance "by"');
  admin.advance(ms);
  return json(200, { now: new Date(admin.now()).toISOString() });
}

function removeEvent({ admin, id }: AdminRequest): Answer {
  admin.removeEvent(id);
  return ok();
}

function clearFaults({ admin }: AdminRequest): Answer {
  admin.clearFaults();
  return ok();
}

function addVm({ admin, fields }: AdminRequest): Answer {
  if (typeof fields.name !== 'string' || fields.name === '') throw new RangeError('a VM needs a "name"');
  return json(201, admin.addVm(fields.name, fields as never));
}

/** The VM moved to another host: its DocumentIncarnation restarts at `incarnation` (default 1). */
function moveVm({ admin, id, fields }: AdminRequest): Answer {
  admin.moveVm(id, typeof fields.incarnation === 'number' ? fields.incarnation : 1);
  return ok();
}

/** The admin API: `METHOD /path` (after /admin, an event or VM id as `:id`) → its handler. */
const ADMIN_ROUTES: ReadonlyMap<string, AdminRoute> = new Map<string, AdminRoute>([
  ['GET /', adminState],
  ['GET /state', adminState],
  ['GET /events', ({ admin }) => json(200, admin.events())],
  [
    'POST /events',
    ({ admin, body }) => json(201, admin.injectEvent(body as Parameters<SimulatorAdmin['injectEvent']>[0])),
  ],
  ['POST /events/:id/status', setEventStatus],
  ['POST /events/:id/reschedule', rescheduleEvent],
  ['DELETE /events/:id', removeEvent],
  ['POST /advance', advanceTime],
  ['GET /faults', ({ admin }) => json(200, admin.faults())],
  [
    'PUT /faults',
    ({ admin, body }) => json(200, admin.setFaults(Array.isArray(body) ? body : [body as never])),
  ],
  ['POST /faults', ({ admin, body }) => json(201, admin.addFault(body as never))],
  ['DELETE /faults', clearFaults],
  ['GET /approvals', ({ admin }) => json(200, admin.approvals())],
  [
    'GET /document',
    ({ admin, query }) =>
      json(200, admin.document(query.get('vm') ?? undefined, query.get('api-version') ?? undefined)),
  ],
  ['GET /requests', ({ admin }) => json(200, admin.requests())],
  ['GET /vms', ({ admin }) => json(200, admin.vms())],
  ['POST /vms', addVm],
  ['POST /vms/:id/move', moveVm],
  ['GET /scenario', ({ admin }) => json(200, { done: admin.scenarioDone() })],
]);

/** The path below /admin, decoded, split into its segments. */
function adminPathParts(path: string): string[] {
  return path.split('/').filter(Boolean).slice(1).map(decodeURIComponent);
}

/** The route key of ADMIN_ROUTES: the id after /events or /vms becomes `:id`. */
function adminRouteKey(method: string, parts: readonly string[]): string {
  const withId = parts[0] === 'events' || parts[0] === 'vms';
  return `${method} /${parts.map((p, i) => (i === 1 && withId ? ':id' : p)).join('/')}`;
}

/** The JSON body of an admin request ({} when empty; none is read for GET and DELETE); throws when invalid. */
async function readAdminBody(method: string, req: IncomingMessage): Promise<unknown> {
  const text = method === 'GET' || method === 'DELETE' ? '' : await readBody(req);
  return text.trim() === '' ? {} : JSON.parse(text);
}

/** A failed admin operation: a validation error lists its issues; 404 for an unknown EventId, else 400. */
function adminErrorAnswer(error: unknown): Answer {
  const message =
    error instanceof Error && 'issues' in error
      ? (error as { issues: Array<{ path: PropertyKey[]; message: string }> }).issues
          .map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`)
          .join('; ')
      : errorMessage(error);
  const status = /^no event with EventId/.test(message) ? 404 : 400;
  return json(status, { error: message });
}

/** The admin API under /admin (see ADMIN_ROUTES); the body is read (and must be JSON) before the route is looked up. */
async function handleAdmin(
  deps: HandlerDeps,
  method: string,
  path: string,
  url: URL,
  req: IncomingMessage,
): Promise<Answer> {
  const parts = adminPathParts(path);
  const route = ADMIN_ROUTES.get(adminRouteKey(method, parts));
  let body: unknown;
  try {
    body = await readAdminBody(method, req);
  } catch (error) {
    return json(400, {
      error: `admin request body is not valid JSON: ${errorMessage(error)}`,
    });
  }
  if (route === undefined) return json(404, { error: `no admin route ${method} ${path}` });
  const request: AdminRequest = {
    admin: deps.admin,
    state: deps.state,
    id: parts[1] ?? '',
    body,
    fields: (body ?? {}) as Record<string, unknown>,
    query: url.searchParams,
  };
  try {
    return route(request);
  } catch (error) {
    return adminErrorAnswer(error);
  }
}
