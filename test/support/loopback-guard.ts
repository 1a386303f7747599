/**
 * Vitest setup file: every TCP connection a test process opens must go to the loopback interface. A connection
 * to any other address (169.254.169.254 above all) throws at once, naming the address, so a test can never send
 * traffic off this machine even by accident (e.g. a forgotten --imds-endpoint falling back to the default).
 * Child processes are not covered here; the tests that spawn the forwarder always pass a loopback endpoint.
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';

const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|::ffff:127\.\d{1,3}\.\d{1,3}\.\d{1,3}|localhost)$/i;

/** Whether `host` (an address or name, optionally in [brackets]) is on the loopback interface. */
export function isLoopbackHost(host: string): boolean {
  return LOOPBACK.test(host.replace(/^\[|\]$/g, ''));
}

function destination(args: unknown[]): { host: string; port: unknown } | undefined {
  const [first, second] = args;
  if (Array.isArray(first)) return destination(first); // net internals pass normalized [options, cb]
  if (typeof first === 'object' && first !== null) {
    const options = first as { host?: string; port?: unknown; path?: string };
    if (options.path !== undefined) return undefined; // Unix socket / named pipe: local by definition
    return { host: options.host ?? 'localhost', port: options.port };
  }
  if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    return { host: typeof second === 'string' ? second : 'localhost', port: first };
  }
  return undefined; // a path string
}

function check(args: unknown[]): void {
  const target = destination(args);
  if (target !== undefined && !isLoopbackHost(target.host)) {
    throw new Error(
      `loopback guard: a test tried to connect to ${target.host}:${String(target.port)}; tests may only talk to ` +
        '127.0.0.1, ::1 or localhost',
    );
  }
}

// undici (fetch, webhook sinks) and most libraries reach Socket#connect.
const originalConnect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function guardedConnect(this: net.Socket, ...args: unknown[]) {
  check(args);
  return (originalConnect as (...a: unknown[]) => net.Socket).apply(this, args);
} as typeof net.Socket.prototype.connect;

// node:http / node:https agents captured net.createConnection before this file ran: guard them directly.
for (const agent of [http.Agent.prototype, https.Agent.prototype] as Array<{ createConnection: unknown }>) {
  const original = agent.createConnection as (...a: unknown[]) => unknown;
  agent.createConnection = function guardedCreateConnection(this: unknown, ...args: unknown[]) {
    const [options] = args as [{ host?: string; hostname?: string; port?: unknown; socketPath?: string }];
    if (options?.socketPath === undefined) {
      check([{ host: options?.host ?? options?.hostname ?? 'localhost', port: options?.port }]);
    }
    return original.apply(this, args);
  };
}
