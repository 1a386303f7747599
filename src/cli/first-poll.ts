/**
 * First poll first: `run` sends its first Scheduled Events GET before the rest of the program loads (the CLI
 * framework, the configuration schema, the store, the pipeline), so those load while IMDS answers instead of
 * before the request leaves. Where the request goes is read from the arguments and, with --config, from the
 * file's `imds` and `source` sections (read the way the configuration loader reads it). When that cannot be
 * known for sure (a replay source, a value taken from the environment, an unreadable file), nothing is sent
 * early and the first poll happens as usual. The IMDS client takes the request over, or discards it when the
 * validated configuration points elsewhere (src/sources/imds/first-request.ts).
 */
import { readConfigFile } from '../config/file.ts';
import { sendFirstRequest } from '../sources/imds/first-request.ts';

const { parseArgs } = process.getBuiltinModule('node:util');

export interface FirstPollTarget {
  endpoint?: string;
  apiVersion?: string;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Where `run <args>` polls first, or undefined when it does not poll IMDS or that is not certain. `args` are the
 * arguments after `run`; `readConfig` returns the raw config file (throws when it cannot).
 */
export function firstPollTarget(
  args: readonly string[],
  readConfig: (file: string) => Record<string, unknown> = readConfigFile,
): FirstPollTarget | undefined {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...args],
      strict: false,
      allowPositionals: true,
      options: {
        config: { type: 'string' },
        'imds-endpoint': { type: 'string' },
        'api-version': { type: 'string' },
        replay: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }) as { values: Record<string, string | boolean | undefined> });
  } catch {
    return undefined;
  }
  if (values.help !== undefined || values.replay !== undefined) return undefined;
  const flag = (name: string): string | undefined | null => {
    const value = values[name];
    if (value === undefined) return undefined;
    return typeof value === 'string' ? value : null; // null: given without a value
  };
  const endpointFlag = flag('imds-endpoint');
  const apiVersionFlag = flag('api-version');
  const configFlag = flag('config');
  if (endpointFlag === null || apiVersionFlag === null || configFlag === null) return undefined;
  let fromFile: { endpoint?: unknown; apiVersion?: unknown } = {};
  if (configFlag !== undefined) {
    let raw: Record<string, unknown>;
    try {
      raw = readConfig(configFlag);
    } catch {
      return undefined;
    }
    const source = raw.source;
    if (source !== undefined && !(isRecord(source) && source.type === 'imds')) return undefined;
    const imds = raw.imds;
    if (imds !== undefined && !isRecord(imds)) return undefined;
    fromFile = imds ?? {};
  }
  const endpoint = endpointFlag ?? fromFile.endpoint;
  const apiVersion = apiVersionFlag ?? fromFile.apiVersion;
  for (const value of [endpoint, apiVersion]) {
    // A value from the environment ("${NAME}") is resolved by the configuration loader: not guessed here.
    if (value !== undefined && (typeof value !== 'string' || value.includes('${'))) return undefined;
  }
  return {
    ...(endpoint === undefined ? {} : { endpoint: endpoint as string }),
    ...(apiVersion === undefined ? {} : { apiVersion: apiVersion as string }),
  };
}

/**
 * Sends `run`'s first Scheduled Events GET now when its target is certain (see the module comment); resolves
 * when it has left (true) or was not sent (false).
 */
export async function sendFirstPoll(args: readonly string[]): Promise<boolean> {
  const target = firstPollTarget(args);
  return target !== undefined && (await sendFirstRequest(target.endpoint, target.apiVersion));
}
