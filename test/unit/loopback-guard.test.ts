/**
 * The loopback guard (test/support/loopback-guard.ts, a vitest setup file) is installed in every test process.
 * Only its pure host check is exercised with non-loopback names here: actually connecting off-machine to prove
 * the guard would itself be the traffic the guard exists to prevent.
 */
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { isLoopbackHost } from '../support/loopback-guard.ts';

describe('loopback guard', () => {
  it('accepts loopback addresses and names only', () => {
    for (const host of [
      '127.0.0.1',
      '127.1.2.3',
      '::1',
      '[::1]',
      '::ffff:127.0.0.1',
      'localhost',
      'LOCALHOST',
    ]) {
      expect(isLoopbackHost(host), host).toBe(true);
    }
    for (const host of [
      '169.254.169.254',
      '10.0.0.1',
      '192.168.1.1',
      '0.0.0.0',
      'example.com',
      'localhost.example',
    ]) {
      expect(isLoopbackHost(host), host).toBe(false);
    }
  });

  it('is installed on the socket and on the http/https agents of this test process', () => {
    expect(net.Socket.prototype.connect.name).toBe('guardedConnect');
    expect(http.Agent.prototype.createConnection.name).toBe('guardedCreateConnection');
    expect(https.Agent.prototype.createConnection.name).toBe('guardedCreateConnection');
  });
});

describe('loopback guard in child processes', () => {
  it('is in NODE_OPTIONS, so a spawned Node.js child is guarded too', () => {
    expect(process.env.NODE_OPTIONS).toContain('loopback-guard.cjs');
    const result = spawnSync(
      process.execPath,
      [
        '-e',
        "const net = require('node:net'), http = require('node:http');" +
          'console.log(net.Socket.prototype.connect.name, http.Agent.prototype.createConnection.name)',
      ],
      { encoding: 'utf8' },
    );
    expect(result.stdout.trim()).toBe('guardedConnect guardedCreateConnection');
  });
});
