/**
 * Secrets (connection strings, SAS keys, webhook URLs, signing secrets) are wrapped in Secret as soon as they
 * are read, so that logging, JSON.stringify, util.inspect and string interpolation show "[redacted]".
 * Only the code that needs the value calls reveal(). Creating a Secret registers its value with the redactor
 * (src/redact.ts), so a receiver that echoes it back cannot get it into a log line, a stored error or CLI output.
 */
import { z } from 'zod';
import { errorMessage } from './errors.ts';
import { registerSecret } from './redact.ts';

const { readFileSync } = process.getBuiltinModule('node:fs');
const { inspect } = process.getBuiltinModule('node:util');

const REDACTED = '[redacted]';

export class Secret {
  readonly #value: string;
  /** Where it came from, safe to show (e.g. "env SEF_EH_CONN", "file /etc/x", "inline"). */
  readonly origin: string;
  /**
   * Set only by `config validate --allow-missing-secrets` (see allowingMissingSecrets): why the value is not
   * available here (e.g. "environment variable SEF_EH_CONN is not set or empty"). Such a secret has no value:
   * checks of its content are skipped and reveal() throws.
   */
  readonly missing: string | undefined;
  constructor(value: string, origin: string, missing?: string) {
    this.#value = value;
    this.origin = origin;
    // The redactor removes the value (and its credential parts) from everything printed or stored.
    registerSecret(value);
    this.missing = missing;
  }
  reveal(): string {
    if (this.missing !== undefined) throw new SecretResolutionError(this.missing);
    return this.#value;
  }
  toString(): string {
    return REDACTED;
  }
  toJSON(): string {
    return REDACTED;
  }
  [inspect.custom](): string {
    return `Secret(${this.origin})`;
  }
}

/** Environment used to resolve secrets; injectable for tests. */
export type Env = Record<string, string | undefined>;

/**
 * Config form of a secret:
 * - "${NAME}"            → the environment variable NAME
 * - { env: NAME }        → the environment variable NAME
 * - { file: PATH }       → the file's contents, trailing newline removed
 * - a plain string       → inline (allowed, but `config show` warns that it is inline)
 */
export const secretInput = z.union(
  [
    z.string().min(1),
    z.object({ env: z.string().min(1) }).strict(),
    z.object({ file: z.string().min(1) }).strict(),
  ],
  // biome-ignore lint/suspicious/noTemplateCurlyInString: names the literal ${ENV} secret syntax
  { error: 'a secret: "${ENV_VAR}", { env: NAME }, { file: PATH } or an inline string' },
);
export type SecretInput = z.infer<typeof secretInput>;

export class SecretResolutionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretResolutionError';
  }
}

const ENV_REF = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

export function resolveSecret(input: SecretInput, env: Env = process.env): Secret {
  return new Secret(readSecretValue(input, env), originOf(input));
}

/**
 * The value a secret reference points to, NOT registered with the redactor: for a setting that is only partly
 * secret (a database URL whose password the caller registers with registerUrlCredentials). Prefer resolveSecret.
 */
export function readSecretValue(input: SecretInput, env: Env = process.env): string {
  if (typeof input === 'string') {
    const m = ENV_REF.exec(input);
    return m ? fromEnv(m[1]!, env) : input;
  }
  if ('env' in input) return fromEnv(input.env, env);
  let text: string;
  try {
    text = readFileSync(input.file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new SecretResolutionError(`cannot read secret file ${input.file}: ${code}`);
  }
  const value = text.replace(/\r?\n$/, '');
  if (value.length === 0) throw new SecretResolutionError(`secret file ${input.file} is empty`);
  return value;
}

function fromEnv(name: string, env: Env): string {
  const value = env[name];
  if (value === undefined || value === '') {
    throw new SecretResolutionError(
      `environment variable ${name} (referenced as a secret) is not set or empty`,
    );
  }
  return value;
}

let missingSecretsAllowed = false;

/**
 * Runs `fn` (a synchronous schema parse) with missing secrets allowed: a reference whose environment variable
 * is unset or whose file cannot be read yields a Secret with `missing` set instead of a validation error. Only
 * `config validate --allow-missing-secrets` uses this (checking a file where the service's secrets are not
 * available: a CI job, an admin shell); everything else resolves every secret.
 */
export function allowingMissingSecrets<T>(fn: () => T): T {
  const previous = missingSecretsAllowed;
  missingSecretsAllowed = true;
  try {
    return fn();
  } finally {
    missingSecretsAllowed = previous;
  }
}

/** Where a secret reference points, safe to show (the same origins resolveSecret gives). */
function originOf(input: SecretInput): string {
  if (typeof input === 'string') {
    const m = ENV_REF.exec(input);
    return m ? `env ${m[1]}` : 'inline';
  }
  return 'env' in input ? `env ${input.env}` : `file ${input.file}`;
}

/** zod type that accepts a SecretInput and yields a resolved Secret (resolution errors become zod issues). */
export function secretSchema(env: () => Env = () => process.env) {
  return secretInput.transform((input, ctx) => {
    try {
      return resolveSecret(input, env());
    } catch (error) {
      if (missingSecretsAllowed && error instanceof SecretResolutionError) {
        return new Secret('', originOf(input), error.message);
      }
      ctx.addIssue({ code: 'custom', message: errorMessage(error) });
      return z.NEVER;
    }
  });
}
