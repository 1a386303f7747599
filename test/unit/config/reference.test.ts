import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../../../src/config/index.ts';
import {
  CONFIG_DOCS_PATH,
  CONFIG_JSON_SCHEMA_PATH,
  configJsonSchema,
  renderConfigDocs,
  renderConfigJsonSchema,
} from '../../../src/config/reference.ts';

// ajv-formats is CommonJS: its default import is the plugin at run time (see src/domain/record-schema.ts).
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ??
  addFormatsModule) as unknown as (ajv: Ajv2020) => Ajv2020;

const root = join(import.meta.dirname, '..', '..', '..');
const EXAMPLE = join(root, 'config', 'forwarder.example.yaml');

describe('generated configuration reference', () => {
  it.each([
    [CONFIG_DOCS_PATH, renderConfigDocs],
    [CONFIG_JSON_SCHEMA_PATH, renderConfigJsonSchema],
  ])('%s is up to date', (path, render) => {
    const current = readFileSync(join(root, path), 'utf8');
    // A plain boolean with a message: the diff of a whole generated file is noise; the fix is one command.
    expect(current === render(), `${path} is out of date: run \`npm run docs:config\``).toBe(true);
  });

  it('documents every key at every depth, the entries of lists of mappings as `path[].key` (approval rules, hooks)', () => {
    type Node = {
      type?: string;
      properties?: Record<string, Node>;
      items?: Node;
      oneOf?: Node[];
      anyOf?: Node[];
    };
    const paths: string[] = [];
    const walk = (node: Node, prefix: string) => {
      for (const [key, child] of Object.entries(node.properties ?? {})) {
        const path = prefix === '' ? key : `${prefix}.${key}`;
        paths.push(path);
        walk(child, path);
        if (child.type === 'array' && child.items !== undefined) walk(child.items, `${path}[]`);
        // Alternatives of a top-level section (source.type: imds | replay); deeper ones are the secret forms
        // ("${ENV}", {env}, {file}), explained once at the top of the page.
        if (prefix === '') for (const branch of child.oneOf ?? child.anyOf ?? []) walk(branch, key);
      }
    };
    const { sinks, ...sections } = (configJsonSchema() as { properties: Record<string, Node> }).properties;
    walk({ properties: sections }, '');
    for (const branch of sinks?.items?.oneOf ?? sinks?.items?.anyOf ?? []) walk(branch, 'sinks[]');
    const docs = renderConfigDocs();
    // sinks[].type is each sink table's heading ("Sink type `webhook`").
    const missing = [...new Set(paths)]
      .filter((path) => path !== 'sinks[].type')
      .filter((path) => !docs.includes(`\`${path}\``));
    expect(missing).toEqual([]);
    expect(paths).toEqual(
      expect.arrayContaining([
        'approval.rules[].name',
        'approval.rules[].match',
        'approval.rules[].action',
        'approval.hooks.prepare[].timeoutMs',
      ]),
    );
  });

  it('documents every top-level key', () => {
    const docs = renderConfigDocs();
    for (const key of Object.keys((configJsonSchema() as { properties: object }).properties)) {
      expect(docs).toContain(`\`${key}`);
    }
  });
});

describe('config/forwarder.example.yaml', () => {
  it('validates with the zod schema', () => {
    const config = loadConfig({ file: EXAMPLE });
    expect(config.sinks.map((s) => s.name)).toEqual(['console', 'local-file']);
    expect(config.telemetry.listen.enabled).toBe(true);
  });

  it('validates with the editor JSON Schema, which also rejects unknown keys', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv); // the schema's "uri" formats are checked, not ignored
    const validate = ajv.compile(configJsonSchema());
    const example = parse(readFileSync(EXAMPLE, 'utf8'));
    expect(validate(example), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ ...example, imds: { pollIntervalMs: 100 } })).toBe(false);
    expect(validate({ ...example, stateDirr: '/x' })).toBe(false);
    expect(validate({ ...example, imds: { endpoint: 'not a url at all' } })).toBe(false);
    expect(validate.errors?.map((e) => `${e.instancePath} ${e.keyword}`)).toContain('/imds/endpoint format');
  });

  it('comments every top-level section', () => {
    const text = readFileSync(EXAMPLE, 'utf8');
    const lines = text.split('\n');
    for (const [index, line] of lines.entries()) {
      if (/^[a-zA-Z]+:/.test(line)) expect(lines[index - 1], `no comment above "${line}"`).toMatch(/^#/);
    }
  });
});

describe('each sink type describes its own rate limit', () => {
  it("no sink's minIntervalMs description talks about another service (Teams' used to say what Slack allows)", () => {
    type Node = { properties?: Record<string, Node & { const?: unknown }>; description?: string };
    const services: Record<string, RegExp> = {
      slack: /\bSlack\b/,
      teams: /\bTeams\b/,
      pagerduty: /\bPagerDuty\b/,
      alertmanager: /\bAlertmanager\b/,
    };
    const sinks = (
      configJsonSchema() as { properties: { sinks: { items: { oneOf?: Node[]; anyOf?: Node[] } } } }
    ).properties.sinks.items;
    const described: Record<string, string> = {};
    for (const branch of sinks.oneOf ?? sinks.anyOf ?? []) {
      const description = branch.properties?.minIntervalMs?.description;
      if (description !== undefined) described[String(branch.properties?.type?.const)] = description;
    }
    expect(Object.keys(described)).toEqual(expect.arrayContaining(['slack', 'teams', 'pagerduty']));
    const foreign = Object.entries(described).flatMap(([type, description]) =>
      Object.entries(services)
        .filter(([service, pattern]) => service !== type && pattern.test(description))
        .map(([service]) => `${type}: ${service}`),
    );
    expect(foreign).toEqual([]);
    expect(described.teams).toMatch(/Teams Workflow/);
  });
});
