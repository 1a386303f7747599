/**
 * The npm packages a start-up must not load unless a configured sink or command needs them (each costs tens of
 * milliseconds and megabytes on every VM): used by the start-up import tests of the package and of the bundle.
 */
const HEAVY = [
  /^@azure\//,
  /^@opentelemetry\//,
  /^@grpc\//,
  /^undici$/,
  /^mustache$/,
  /^prom-client$/,
  /^pino-pretty$/,
  /^ajv/,
  /^@kubernetes\//,
];

/** The heavy packages among `packages`. */
export const heavyIn = (packages: string[]): string[] => packages.filter((p) => HEAVY.some((h) => h.test(p)));
