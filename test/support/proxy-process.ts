/**
 * A real forward proxy in its own process on 127.0.0.1 (plain-HTTP absolute-form requests and CONNECT
 * tunnels, forwarded for real), logging every request it forwards as a JSON line on its stdout; `seen` is
 * that log parsed. Stop it with close() (SIGKILL).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { ProxiedRequest } from './http-sink-server.ts';

const MAIN = fileURLToPath(new URL('./proxy-process-main.ts', import.meta.url));

export interface ProxyProcess {
  /** http://127.0.0.1:PORT */
  url: string;
  /** Every request the proxy logged so far, in order. */
  readonly seen: ProxiedRequest[];
  child: ChildProcess;
  close(): Promise<void>;
}

export async function startProxyProcess(): Promise<ProxyProcess> {
  const child = spawn(process.execPath, [MAIN], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { PATH: process.env.PATH, SystemRoot: process.env.SystemRoot },
  });
  const seen: ProxiedRequest[] = [];
  let buffered = '';
  let resolveUrl: (url: string) => void = () => {};
  const listening = new Promise<string>((resolve) => {
    resolveUrl = resolve;
  });
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    let newline = buffered.indexOf('\n');
    while (newline >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      const entry = JSON.parse(line) as ProxiedRequest | { listening: string };
      if ('listening' in entry) resolveUrl(entry.listening);
      else seen.push(entry);
      newline = buffered.indexOf('\n');
    }
  });
  const exited = once(child, 'exit');
  const url = await Promise.race([
    listening,
    exited.then(() => Promise.reject(new Error('the proxy process exited before listening'))),
  ]);
  return {
    url,
    seen,
    child,
    close: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
}
