/**
 * The loopback guard itself, CommonJS so that it also loads into child processes with `node --require` (the
 * vitest setup file test/support/loopback-guard.ts installs it in every test process and adds it to
 * NODE_OPTIONS, so every Node.js child a test spawns with the inherited environment is guarded too: the
 * forwarder, the simulator, the fleet consumer, the single executable).
 *
 * Every TCP connection must go to the loopback interface. A connection to any other address (169.254.169.254
 * above all) throws at once, naming the address, and writes the same line to stderr (a child's error may be
 * caught by the code under test; its stderr is what the test sees).
 */
'use strict';
const http = require('node:http');
const https = require('node:https');
const net = require('node:net');

const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|::ffff:127\.\d{1,3}\.\d{1,3}\.\d{1,3}|localhost)$/i;

/** Whether `host` (an address or name, optionally in [brackets]) is on the loopback interface. */
function isLoopbackHost(host) {
  return LOOPBACK.test(String(host).replace(/^\[|\]$/g, ''));
}

function destination(args) {
  const [first, second] = args;
  if (Array.isArray(first)) return destination(first); // net internals pass normalized [options, cb]
  if (typeof first === 'object' && first !== null) {
    if (first.path !== undefined) return undefined; // Unix socket / named pipe: local by definition
    return { host: first.host ?? 'localhost', port: first.port };
  }
  if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    return { host: typeof second === 'string' ? second : 'localhost', port: first };
  }
  return undefined; // a path string
}

function check(args) {
  const target = destination(args);
  if (target !== undefined && !isLoopbackHost(target.host)) {
    const message =
      `loopback guard: a test tried to connect to ${target.host}:${String(target.port)}; tests may only talk to ` +
      '127.0.0.1, ::1 or localhost';
    process.stderr.write(`${message}\n`);
    throw new Error(message);
  }
}

if (net.Socket.prototype.connect.name !== 'guardedConnect') {
  // undici (fetch, webhook sinks) and most libraries reach Socket#connect.
  const originalConnect = net.Socket.prototype.connect;
  net.Socket.prototype.connect = function guardedConnect(...args) {
    check(args);
    return originalConnect.apply(this, args);
  };

  // node:http / node:https agents captured net.createConnection before this file ran: guard them directly.
  for (const agent of [http.Agent.prototype, https.Agent.prototype]) {
    const original = agent.createConnection;
    agent.createConnection = function guardedCreateConnection(...args) {
      const [options] = args;
      if (options?.socketPath === undefined) {
        check([{ host: options?.host ?? options?.hostname ?? 'localhost', port: options?.port }]);
      }
      return original.apply(this, args);
    };
  }
}

module.exports = { isLoopbackHost };
