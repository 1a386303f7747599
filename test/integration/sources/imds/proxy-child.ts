/**
 * Child process for proxy.test.ts: runs the IMDS client with proxy variables set in its environment, then
 * makes two control requests (global fetch and http.get on the global agent) that DO honour them, proving the
 * environment really routes ordinary HTTP through the recording proxy. Prints one JSON line of results.
 */
import http from 'node:http';
import { ImdsClient } from '../../../../src/sources/imds/client.ts';

const [endpoint, controlUrl] = process.argv.slice(2) as [string, string];
const client = new ImdsClient({ endpoint, requestTimeoutMs: 5000, firstRequestTimeoutMs: 5000 });
const result: Record<string, unknown> = {};
try {
  const { document } = await client.getScheduledEvents();
  result.incarnation = document.DocumentIncarnation;
  await client.approve(['proxy-test-event']);
  result.vmName = (await client.getInstanceMetadata()).name;
} catch (error) {
  result.clientError = String(error);
} finally {
  client.close();
}
try {
  result.fetchControl = (await fetch(`${controlUrl}/control-fetch`)).status;
} catch (error) {
  result.fetchControl = String(error);
}
result.httpControl = await new Promise((resolve) => {
  http
    .get(`${controlUrl}/control-http`, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    })
    .on('error', (error) => resolve(String(error)));
});
process.stdout.write(`${JSON.stringify(result)}\n`);
