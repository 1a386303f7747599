/**
 * Validation of lifecycle records against schemas/lifecycle-record.schema.json and of heartbeats against
 * schemas/heartbeat.schema.json (JSON Schema 2020-12, the heartbeat's `vm` refers to the record's), with ajv +
 * ajv-formats. Used by tests (every produced record and heartbeat must validate) and available at run time.
 */

import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

const { readFileSync } = process.getBuiltinModule('node:fs');

/** Location of the schema file (works from src/ and from the built dist/ alike). */
export const LIFECYCLE_RECORD_SCHEMA_URL = new URL(
  '../../schemas/lifecycle-record.schema.json',
  import.meta.url,
);

// ajv-formats is CommonJS: under NodeNext its default import is the module object at type level,
// while Node hands us the plugin function itself. Accept both shapes.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ??
  addFormatsModule) as unknown as (ajv: Ajv2020) => Ajv2020;

/** Location of the heartbeat's schema. */
export const HEARTBEAT_SCHEMA_URL = new URL('../../schemas/heartbeat.schema.json', import.meta.url);

let compiled: { record: ValidateFunction; heartbeat: ValidateFunction } | undefined;

/** The parsed JSON Schema of a lifecycle record. */
export function lifecycleRecordSchema(): Record<string, unknown> {
  return JSON.parse(readFileSync(LIFECYCLE_RECORD_SCHEMA_URL, 'utf8')) as Record<string, unknown>;
}

/** The parsed JSON Schema of a heartbeat. */
export function heartbeatSchema(): Record<string, unknown> {
  return JSON.parse(readFileSync(HEARTBEAT_SCHEMA_URL, 'utf8')) as Record<string, unknown>;
}

function validators(): { record: ValidateFunction; heartbeat: ValidateFunction } {
  if (compiled === undefined) {
    const ajv = new Ajv2020({ allErrors: true, strictTypes: false, allowUnionTypes: true });
    addFormats(ajv);
    const record = ajv.compile(lifecycleRecordSchema());
    compiled = { record, heartbeat: ajv.compile(heartbeatSchema()) };
  }
  return compiled;
}

/**
 * Validates one record; returns the list of problems (empty when valid), each naming the JSON pointer of
 * the offending value.
 */
export function validateRecord(record: unknown): string[] {
  return problems(validators().record, record);
}

/** Validates one heartbeat (schemas/heartbeat.schema.json); the problems as validateRecord's. */
export function validateHeartbeat(heartbeat: unknown): string[] {
  return problems(validators().heartbeat, heartbeat);
}

function problems(validate: ValidateFunction, value: unknown): string[] {
  if (validate(value)) return [];
  return (validate.errors ?? []).map(
    (error) => `${error.instancePath || '/'} ${error.message ?? 'is invalid'}${formatParams(error.params)}`,
  );
}

function formatParams(params: Record<string, unknown>): string {
  const entries = Object.entries(params);
  return entries.length === 0 ? '' : ` (${entries.map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join(', ')})`;
}
