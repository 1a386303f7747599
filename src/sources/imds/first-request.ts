/**
 * The first Scheduled Events GET of `run`, sent by the entry point (src/cli/first-poll.ts) before the rest of
 * the program loads: loading modules, validating the configuration and opening the store then overlap the
 * request instead of delaying it. The IMDS client created for the same URL takes the exchange over
 * (ImdsClient's constructor calls takeFirstRequest), applies its own first-request timeout and abort signal
 * to it and reuses its kept-alive connection; the answer becomes the first poll's outcome. Nothing is sent
 * twice, and a client for another URL discards it.
 *
 * Until a client takes it, the request does not keep the process alive: when `run` stops before polling (a
 * configuration error), the process exits as it would have without it.
 */
import type { Agent } from 'node:http';
import { DEFAULT_API_VERSION, DEFAULT_IMDS_ENDPOINT } from './defaults.ts';
import { buildScheduledEventsUrl, type Exchange, imdsAgent, startExchange } from './exchange.ts';

interface FirstRequest {
  url: string;
  agent: Agent;
  exchange: Exchange;
  taken: boolean;
}

let pending: FirstRequest | undefined;

/**
 * How long the caller waits at most for the request to leave. Connecting to IMDS takes well under a
 * millisecond on a VM; the wait matters only when nothing answers at the address (then start-up goes on).
 */
export const FIRST_REQUEST_SEND_WAIT_MS = 100;

/**
 * Sends the first Scheduled Events GET now. Resolves once the request has been written to the connection (the
 * event loop has to run for that: module loading that follows would otherwise hold it back), after
 * FIRST_REQUEST_SEND_WAIT_MS at most, or at once with false (nothing sent) for an invalid endpoint.
 */
export async function sendFirstRequest(
  endpoint: string = DEFAULT_IMDS_ENDPOINT,
  apiVersion: string = DEFAULT_API_VERSION,
): Promise<boolean> {
  let url: string;
  try {
    url = buildScheduledEventsUrl(endpoint, apiVersion);
  } catch {
    return false; // the configuration check names the problem
  }
  discard(pending);
  const agent = imdsAgent();
  let exchange: Exchange;
  try {
    exchange = startExchange(agent, 'GET', url);
  } catch {
    agent.destroy();
    return false; // the poller's own first request reports the problem
  }
  const first: FirstRequest = { url, agent, exchange, taken: false };
  first.exchange.request.on('socket', (socket) => {
    if (!first.taken) socket.unref();
  });
  pending = first;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, FIRST_REQUEST_SEND_WAIT_MS);
    timer.unref();
    const done = (): void => {
      clearTimeout(timer);
      resolve();
    };
    first.exchange.request.once('finish', done);
    first.exchange.answer.then(done, done);
  });
  return true;
}

/**
 * The first request if it was sent to `url` (the caller now owns its agent and awaits its exchange), else
 * undefined; a first request to another URL is discarded. Only the first call can return it.
 */
export function takeFirstRequest(url: string): { agent: Agent; exchange: Exchange } | undefined {
  const first = pending;
  pending = undefined;
  if (first === undefined) return undefined;
  if (first.url !== url) {
    discard(first);
    return undefined;
  }
  first.taken = true;
  first.exchange.request.socket?.ref();
  return first;
}

function discard(first: FirstRequest | undefined): void {
  if (first === undefined) return;
  first.exchange.request.destroy();
  first.agent.destroy();
}
