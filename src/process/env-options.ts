/**
 * The environment keys of everything that starts a command (the exec sink, approval hooks): `env` (variables
 * set) and `passEnv` (variables inherited from the forwarder's environment besides the minimal set). One
 * definition, so both document and check them alike. Light on purpose (zod only): config schemas import it.
 */
import { z } from 'zod';

const NAME = /^[^=\0]+$/;
const PASS = /^[^=\0*]+\*?$|^\*$/;

/** `env`: variables set for the command (values as written; no expansion). */
export const envSetSchema = z
  .record(
    z.string().regex(NAME, { error: 'a variable name: non-empty, without "=" or NUL' }),
    z.string().refine((v) => !v.includes('\0'), {
      error: 'an environment value cannot contain a NUL character (no process can receive it)',
    }),
  )
  .default({});

/** `passEnv`: names of the forwarder's variables the command inherits too. */
export const passEnvSchema = z
  .array(
    z.string().regex(PASS, {
      // The config error formatter puts "expected " in front of a format issue.
      error:
        'a variable name (HTTPS_PROXY) or a prefix ending in * (MYAPP_*): no "=" or NUL, * only at the end',
    }),
  )
  .default([]);

/** The behaviour the `env` / `passEnv` descriptions share (docs/configuration.md is generated from them). */
export const ENV_DESCRIPTION =
  'variables set for the command (over the inherited ones and under the SEF_* values)';
export const PASS_ENV_DESCRIPTION =
  "variables of the forwarder's environment the command inherits (NAME, or PREFIX*) besides the minimal set " +
  '(PATH, HOME, LANG, LC_*, TZ, ...; on Windows also SYSTEMROOT, COMSPEC, PATHEXT, TEMP, ...). Nothing else is ' +
  'inherited: secrets in the service environment never reach the command. "*" passes everything (not recommended)';
