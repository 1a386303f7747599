/**
 * Size limits: Slack Block Kit limits on oversized descriptions, long resource lists and templated messages
 * (never cutting a surrogate pair); the Teams message under 20 KB and a valid Adaptive Card 1.4 according to
 * Microsoft's adaptivecards library (test/support/adaptive-card.ts).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { truncateText } from '../../../../src/sinks/format.ts';
import {
  createSlackSink,
  createTeamsSink,
  slackOptionsSchema,
  teamsOptionsSchema,
} from '../../../../src/sinks/webhook/index.ts';
import { buildSlackMessage, SLACK_LIMITS, type SlackMessage } from '../../../../src/sinks/webhook/slack.ts';
import { buildTeamsMessage, messageBytes, TEAMS_MAX_BYTES } from '../../../../src/sinks/webhook/teams.ts';
import { adaptiveCardProblems } from '../../../support/adaptive-card.ts';
import { HttpSinkServer } from '../../../support/http-sink-server.ts';
import { makeRecord } from '../../../support/records.ts';
import { context, fakeClock, signal } from '../../../support/sink-tests.ts';
import { makeTempDir } from '../../../support/tmp.ts';
import { ALL_TRANSITIONS } from './fixtures.ts';

/** Valid Adaptive Card 1.4 per Microsoft's adaptivecards library (see test/support/adaptive-card.ts). */
function validateCard(card: Record<string, unknown>): boolean {
  validateCard.errors = adaptiveCardProblems(card);
  return validateCard.errors.length === 0;
}
validateCard.errors = [] as string[];

/** 🚨 is a surrogate pair; a description of them puts a pair across every possible cut point. */
const HUGE_DESCRIPTION = `Start ${'🚨 maintenance & <details> '.repeat(800)}`;
const MANY_RESOURCES = Array.from({ length: 3000 }, (_, i) => `vmss-web_${String(i).padStart(4, '0')}`);

function isWellFormed(text: string): boolean {
  return text.isWellFormed();
}

function assertSlackLimits(message: SlackMessage): void {
  expect(message.text.length).toBeLessThanOrEqual(SLACK_LIMITS.text);
  expect(isWellFormed(message.text)).toBe(true);
  const blocks = message.blocks ?? [];
  expect(blocks.length).toBeLessThanOrEqual(SLACK_LIMITS.blocks);
  for (const block of blocks) {
    if (block.text) {
      expect(block.text.text.length).toBeLessThanOrEqual(block.type === 'header' ? 150 : SLACK_LIMITS.text);
      expect(isWellFormed(block.text.text)).toBe(true);
    }
    if (block.fields) {
      expect(block.fields.length).toBeLessThanOrEqual(SLACK_LIMITS.fields);
      for (const f of block.fields) {
        expect(f.text.length).toBeLessThanOrEqual(SLACK_LIMITS.fieldText);
        expect(isWellFormed(f.text)).toBe(true);
      }
    }
  }
}

let server: HttpSinkServer;
const tmp = makeTempDir('sef-webhook-');
beforeAll(async () => {
  server = await HttpSinkServer.start({ status: 200, body: 'ok' });
});
afterAll(async () => {
  await server.close();
  tmp.cleanup();
});

describe('truncateText', () => {
  it('never splits a surrogate pair and marks the cut', () => {
    const text = '😀'.repeat(10); // 20 code units
    for (let max = 1; max < 20; max++) {
      const cut = truncateText(text, max);
      expect(cut.length).toBeLessThanOrEqual(max);
      expect(cut.isWellFormed()).toBe(true);
      expect(cut.endsWith('…')).toBe(true);
    }
    expect(truncateText('short', 10)).toBe('short');
  });
});

describe('Slack Block Kit limits', () => {
  it('cuts an oversized description and a long resource list, and says how many resources were left out', async () => {
    const record = makeRecord('scheduled', { description: HUGE_DESCRIPTION, resources: MANY_RESOURCES });
    const sink = createSlackSink(
      's',
      slackOptionsSchema().parse({ url: server.url('/limits'), minIntervalMs: 0 }),
      context(),
      {
        clock: fakeClock(),
      },
    );
    await sink.deliver([record], signal());
    await sink.close?.();
    const message = JSON.parse(server.requests.at(-1)!.body) as SlackMessage;
    assertSlackLimits(message);
    const description = message.blocks![1]!.text!.text;
    expect(description.length).toBe(SLACK_LIMITS.text);
    expect(description.endsWith('…')).toBe(true);
    const resources = message.blocks![2]!.fields!.find((f) => f.text.startsWith('*Resources (3000)*'))!;
    expect(resources.text).toMatch(/… and \d+ more$/);
  });

  it('enforces the limits on a templated message too (60 blocks, 15 fields, huge texts)', async () => {
    const blocks = [
      { type: 'header', text: { type: 'plain_text', text: `{{title}} ${'x'.repeat(300)}` } },
      {
        type: 'section',
        text: { type: 'mrkdwn', text: '{{event.Description}}' },
        fields: Array.from({ length: 15 }, () => ({ type: 'mrkdwn', text: '{{resources}}' })),
      },
      ...Array.from({ length: 58 }, (_, i) => ({
        type: 'section',
        text: { type: 'mrkdwn', text: `block ${i} {{vmName}}` },
      })),
    ];
    const file = join(tmp.dir, 'slack.mustache.json');
    writeFileSync(file, JSON.stringify({ blocks }));
    const record = makeRecord('started', { description: HUGE_DESCRIPTION, resources: MANY_RESOURCES });
    const sink = createSlackSink(
      's',
      slackOptionsSchema().parse({ url: server.url('/tpl'), template: file, minIntervalMs: 0 }),
      context(),
      {
        clock: fakeClock(),
      },
    );
    await sink.deliver([record], signal());
    await sink.close?.();
    const message = JSON.parse(server.requests.at(-1)!.body) as SlackMessage;
    assertSlackLimits(message);
    expect(message.blocks).toHaveLength(50);
    expect(message.blocks![1]!.fields).toHaveLength(10);
    // Fallback text was filled in because the template had none.
    expect(message.text).toContain('Azure maintenance started: Reboot on vm-web-01');
  });

  it('keeps every default message within limits for every transition', () => {
    for (const t of ALL_TRANSITIONS) {
      assertSlackLimits(
        buildSlackMessage(makeRecord(t, { description: HUGE_DESCRIPTION, resources: MANY_RESOURCES })),
      );
    }
  });
});

describe('Teams Adaptive Card', () => {
  it('is valid Adaptive Card 1.4 for every transition', () => {
    for (const t of ALL_TRANSITIONS) {
      const message = buildTeamsMessage(makeRecord(t));
      const card = message.attachments[0]!.content;
      const ok = validateCard(card);
      expect(validateCard.errors ?? []).toEqual([]);
      expect(ok).toBe(true);
      expect(card.version).toBe('1.4');
    }
  });

  it('the validator rejects broken cards (it is really checking)', () => {
    const card = (body: unknown[]) => ({ type: 'AdaptiveCard', version: '1.4', body });
    expect(validateCard(card([{ type: 'TextBlock' }]))).toBe(false);
    expect(validateCard(card([{ type: 'FactSet', facts: [{ title: 1 }] }]))).toBe(false);
    expect(validateCard(card([{ type: 'Bogus' }]))).toBe(false);
    expect(validateCard.errors.join('\n')).toContain('Unknown element type "Bogus"');
    expect(validateCard(card([{ type: 'TextBlock', text: 'x', size: 'Huge' }]))).toBe(false);
    expect(validateCard(card([{ type: 'TextBlock', text: 'x', style: 'heading' }]))).toBe(false);
    expect(validateCard.errors.join('\n')).toContain('version 1.5');
  });

  it('stays under 20 KB and valid with an oversized description and 3000 resources, as sent over HTTP', async () => {
    const record = makeRecord('scheduled', { description: HUGE_DESCRIPTION, resources: MANY_RESOURCES });
    const sink = createTeamsSink(
      't',
      teamsOptionsSchema().parse({ url: server.url('/teams-big'), minIntervalMs: 0 }),
      context(),
      {
        clock: fakeClock(),
      },
    );
    await sink.deliver([record], signal());
    await sink.close?.();
    const request = server.requests.at(-1)!;
    expect(Buffer.byteLength(request.body)).toBeLessThanOrEqual(TEAMS_MAX_BYTES);
    const message = JSON.parse(request.body);
    expect(message.type).toBe('message');
    expect(message.attachments[0].contentType).toBe('application/vnd.microsoft.card.adaptive');
    expect(validateCard(message.attachments[0].content)).toBe(true);
    expect(messageBytes(message)).toBeLessThanOrEqual(TEAMS_MAX_BYTES);
    expect(JSON.stringify(message).isWellFormed()).toBe(true);
  });

  it('renders an operator template card (JSON- and Markdown-escaped values) and validates it', async () => {
    const file = join(tmp.dir, 'card.mustache.json');
    writeFileSync(
      file,
      JSON.stringify({
        type: 'AdaptiveCard',
        version: '1.4',
        body: [
          { type: 'TextBlock', text: '{{emoji}} {{title}}', wrap: true },
          { type: 'TextBlock', text: 'Not before {{notBefore}}; "{{event.Description}}"', wrap: true },
        ],
      }),
    );
    const record = makeRecord('scheduled', { description: 'quotes " and \\ backslashes\nnewline' });
    const sink = createTeamsSink(
      't',
      teamsOptionsSchema().parse({ url: server.url('/teams-tpl'), template: file, minIntervalMs: 0 }),
      context(),
      {
        clock: fakeClock(),
      },
    );
    await sink.deliver([record], signal());
    await sink.close?.();
    const card = JSON.parse(server.requests.at(-1)!.body).attachments[0].content;
    expect(validateCard(card)).toBe(true);
    // The value's line break became a space and its backslash is escaped for Adaptive Card Markdown.
    expect(card.body[1].text).toBe(
      'Not before Fri, 19 Sep 2025 18:29:47 UTC (in 15 min); "quotes " and \\\\ backslashes newline"',
    );
  });

  it('a template that renders invalid JSON is a permanent error naming the template', async () => {
    const file = join(tmp.dir, 'broken.mustache.json');
    writeFileSync(file, '{"type": "AdaptiveCard", "body": [{{{event.Description}}}]}');
    const sink = createTeamsSink(
      't',
      teamsOptionsSchema().parse({ url: server.url('/teams-broken'), template: file }),
      context(),
    );
    const before = server.requests.length;
    await expect(sink.deliver([makeRecord('scheduled')], signal())).rejects.toMatchObject({
      retryable: false,
      code: 'template-invalid-json',
      message: expect.stringContaining('broken.mustache.json'),
    });
    await sink.close?.();
    expect(server.requests.length).toBe(before);
  });
});
