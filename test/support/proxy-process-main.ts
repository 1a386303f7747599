/**
 * Entry point of the forward-proxy process (see proxy-process.ts): a RecordingProxy on 127.0.0.1 that prints
 * `{"listening": URL}` once, then one JSON line per request it forwards ({method, target}).
 */
import { RecordingProxy } from './http-sink-server.ts';

const proxy = await RecordingProxy.start();
proxy.onSeen = (request) => process.stdout.write(`${JSON.stringify(request)}\n`);
process.stdout.write(`${JSON.stringify({ listening: proxy.url })}\n`);
