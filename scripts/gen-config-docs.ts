/**
 * Regenerates docs/configuration.md and schemas/config.schema.json from the zod config schema
 * (`npm run docs:config`). With --check, writes nothing and exits 1 when either file is out of date.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CONFIG_DOCS_PATH,
  CONFIG_JSON_SCHEMA_PATH,
  renderConfigDocs,
  renderConfigJsonSchema,
} from '../src/config/reference.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outputs: Array<[string, string]> = [
  [CONFIG_DOCS_PATH, renderConfigDocs()],
  [CONFIG_JSON_SCHEMA_PATH, renderConfigJsonSchema()],
];
const check = process.argv.includes('--check');
let stale = 0;
for (const [path, text] of outputs) {
  const file = join(root, path);
  let current: string | undefined;
  try {
    current = readFileSync(file, 'utf8');
  } catch {
    current = undefined;
  }
  if (current === text) continue;
  if (check) {
    process.stderr.write(`${path} is out of date: run \`npm run docs:config\`\n`);
    stale++;
  } else {
    writeFileSync(file, text);
    process.stdout.write(`wrote ${path}\n`);
  }
}
process.exitCode = stale > 0 ? 1 : 0;
