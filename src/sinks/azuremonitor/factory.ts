/**
 * The Azure Monitor sink's registry entry. Light on purpose: the options schema needs only zod (and the shared
 * credential and TLS schemas); the sink loads in create(), i.e. only when a sink of this type is configured, and
 * the SDKs (@azure/monitor-ingestion, @azure/identity) at its first delivery (./client.ts).
 */
import { ConfigError } from '../../errors.ts';
import { tlsWarnings } from '../http/tls.ts';
import { proxyFor } from '../proxy.ts';
import type { SinkContext, SinkFactory } from '../types.ts';
import { type AzureMonitorSinkOptions, azureMonitorOptionsSchema } from './options.ts';

/** Registered in src/sinks/registry.ts as type 'azuremonitor'. */
export const azureMonitorSinkFactory: SinkFactory<ReturnType<typeof azureMonitorOptionsSchema>> = {
  type: 'azuremonitor',
  description:
    'Azure Monitor Logs (Logs Ingestion API, data collection rule): one Log Analytics row per record',
  get optionsSchema() {
    return azureMonitorOptionsSchema();
  },
  async create(name: string, options: AzureMonitorSinkOptions, context: SinkContext) {
    const problem = proxyWithTlsProblem(name, options, process.env);
    if (problem !== undefined) throw new ConfigError(problem, []);
    const { AzureMonitorSink } = await import('./sink.ts');
    return new AzureMonitorSink(name, options, context.logger, proxyFor(new URL(options.endpoint)));
  },
  startProblems(name, options, env) {
    const problem = proxyWithTlsProblem(name, options, env);
    return problem === undefined ? [] : [problem];
  },
  warnings(name, options) {
    return tlsWarnings(name, options.tls);
  },
};

/** The Azure SDK ignores TLS options behind a proxy: `tls` with a proxy for the endpoint cannot work. */
function proxyWithTlsProblem(
  name: string,
  options: AzureMonitorSinkOptions,
  env: Record<string, string | undefined>,
): string | undefined {
  if (options.tls === undefined) return undefined;
  const endpoint = new URL(options.endpoint);
  if (proxyFor(endpoint, env) === undefined) return undefined;
  return (
    `sink ${name}: tls cannot be combined with the HTTPS proxy the environment sets for ${endpoint.host} (the ` +
    'Azure SDK ignores TLS options behind a proxy): exempt the endpoint with NO_PROXY, or remove tls and trust ' +
    'the CA for the whole process with NODE_EXTRA_CA_CERTS'
  );
}
