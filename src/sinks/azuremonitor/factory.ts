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
export const azureMonitorSinkFactory: SinkFactory<typeof azureMonitorOptionsSchema> = {
  type: 'azuremonitor',
  description:
    'Azure Monitor Logs (Logs Ingestion API, data collection rule): one Log Analytics row per record',
  optionsSchema: azureMonitorOptionsSchema,
  async create(name: string, options: AzureMonitorSinkOptions, context: SinkContext) {
    const proxy = proxyFor(new URL(options.endpoint));
    if (proxy !== undefined && options.tls !== undefined) {
      throw new ConfigError(
        `sink ${name}: tls cannot be combined with the HTTPS proxy the environment sets for ${new URL(options.endpoint).host} (the Azure SDK ignores TLS options behind a proxy): exempt the endpoint with NO_PROXY, or remove tls and trust the CA for the whole process with NODE_EXTRA_CA_CERTS`,
        [],
      );
    }
    const { AzureMonitorSink } = await import('./sink.ts');
    return new AzureMonitorSink(name, options, context.logger, proxy);
  },
  warnings(name, options) {
    return tlsWarnings(name, options.tls);
  },
};
