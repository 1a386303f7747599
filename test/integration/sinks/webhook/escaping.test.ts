/**
 * Hostile IMDS fields (issue "Forwarder hardening, round 3", item 7): a real `node src/cli/main.ts run` child
 * polls the IMDS simulator over HTTP, whose admin API serves an event whose EventId, EventType, Description,
 * Resources and EventSource (and the VM name and the Kubernetes node and cluster names) carry Slack
 * mentions and links and Markdown (node labels go through the same template escaping as every other value).
 * Slack and Teams sinks, default and templated, deliver to a real HTTP receiver;
 * every string of every received payload is checked:
 *
 *  - Slack: no `<` or `>` at all (Slack forms `<!channel>`, `<@U…>` and `<url|label>` only from them); the
 *    hostile text arrives escaped as `&lt;!channel&gt;`.
 *  - Teams: every string (URL properties aside) rendered with markdown-it, the Markdown engine of the Adaptive
 *    Cards reference renderer, is one paragraph of text: no link, emphasis, code, heading, list, quote, image
 *    or line break, and `{{DATE(…)}}` cannot form; the Event ID fact renders as the EventId itself.
 *
 * `{{{name}}}` stays raw (documented as unsafe), and the portal link is percent-encoded: checked with real sinks
 * in-process.
 */
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { LifecycleRecord } from '../../../../src/domain/index.ts';
import { type RunningSimulator, startSimulator } from '../../../../src/simulator/index.ts';
import {
  createSlackSink,
  createTeamsSink,
  slackOptionsSchema,
  teamsOptionsSchema,
} from '../../../../src/sinks/webhook/index.ts';
import { adaptiveCardProblems } from '../../../support/adaptive-card.ts';
import { type ForwarderChild, spawnCli } from '../../../support/child.ts';
import { HttpSinkServer } from '../../../support/http-sink-server.ts';
import {
  type KubernetesDouble,
  nodeFixture,
  startKubernetesDouble,
  writeKubeconfig,
} from '../../../support/kubernetes-double/index.ts';
import { makeRecord } from '../../../support/records.ts';
import { context, fakeClock, signal } from '../../../support/sink-tests.ts';
import { makeTempDir } from '../../../support/tmp.ts';
import { waitFor } from '../../../support/wait.ts';

// markdown-it ships no types; the Adaptive Cards renderer calls `markdownit().render(text)` the same way.
const markdownit = createRequire(import.meta.url)('markdown-it') as () => { render(text: string): string };
const markdown = markdownit();

const EVENT_ID = '<!channel> [id](https://evil.example/id) **E1**';
const EVENT_TYPE = 'Reboot <!here> _urgent_';
const DESCRIPTION = [
  'Maintenance <!channel> <@U123> <https://evil.example|click> <!subteam^S1>',
  '# heading',
  '- item',
  '1. first',
  '> quote',
  '[click](https://evil.example) ![img](https://evil.example/x.png) **bold** _it_ `code` ~~gone~~',
  '{{DATE(2025-09-19T18:29:47Z, SHORT)}} &lt;!channel&gt; <b>html</b>  ',
  '    indented code',
].join('\n');
const EVENT_SOURCE = '**User** <!everyone>';
const VM = 'vm-<!here>-[x](https://evil.example)';
const RESOURCE_2 = '- <@U999> #chan';
const NODE = 'node-<@U42>-**n**';
const CLUSTER = '[cluster](https://evil.example) <!channel>';

const tmp = makeTempDir('sef-escaping-');
const closers: Array<() => Promise<void> | void> = [];
const children: ForwarderChild[] = [];
afterEach(async () => {
  for (const c of children.splice(0))
    if (c.child.exitCode === null && c.child.signalCode === null) {
      c.child.kill('SIGKILL');
      await c.exited;
    }
  for (const close of closers.splice(0).reverse()) await close();
});
afterAll(() => tmp.cleanup());

/** The parts of the received Slack and Teams bodies these tests read. */
interface SlackBody {
  text: string;
}
interface TeamsBody {
  attachments: Array<{ content: { body: Array<{ text: string }>; actions?: unknown } }>;
}

/** Every string in a JSON value with the key it is the value of (keys themselves included). */
function strings(node: unknown, key = '', out: Array<{ key: string; text: string }> = []) {
  if (typeof node === 'string') out.push({ key, text: node });
  else if (Array.isArray(node)) for (const item of node) strings(item, key, out);
  else if (node !== null && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      out.push({ key: '(key)', text: k });
      strings(v, k, out);
    }
  }
  return out;
}

const isUrlProperty = (key: string) => /(^|_)url$|Url$/i.test(key);

/** Problems with a received Slack payload: any `<` or `>` anywhere. */
function slackProblems(payload: unknown): string[] {
  return strings(payload)
    .filter(({ text }) => /[<>]/.test(text))
    .map(({ key, text }) => `${key}: ${JSON.stringify(text)}`);
}

/** Problems with a received Teams payload: a string that markdown-it renders as more than one line of text. */
function teamsProblems(payload: unknown): string[] {
  const problems: string[] = [];
  for (const { key, text } of strings(payload)) {
    if (text === '' || isUrlProperty(key) || key === '$schema') continue;
    const html = markdown.render(text);
    if (!/^<p>[^<\n]*<\/p>\n$/.test(html)) problems.push(`${key}: ${JSON.stringify(text)} → ${html}`);
    if (/\{\{(DATE|TIME)\(/.test(text)) problems.push(`${key}: Adaptive Card date function in ${text}`);
  }
  return problems;
}

/** The text markdown-it shows for a one-paragraph string (entities decoded). */
function shownText(text: string): string {
  return markdown
    .render(text)
    .replace(/^<p>|<\/p>\n$/g, '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, '&');
}

const SLACK_TEMPLATE = {
  text: '{{summary}} {{event.Description}}',
  blocks: [
    { type: 'header', text: { type: 'plain_text', text: '{{slackEmoji}} {{title}}' } },
    {
      type: 'section',
      text: { type: 'mrkdwn', text: '*{{vmName}}* {{event.EventId}} {{event.EventSource}}' },
    },
    {
      type: 'section',
      fields: [
        { type: 'mrkdwn', text: '*Type*\n{{event.EventType}}' },
        { type: 'mrkdwn', text: '*Resources*\n{{resources}}' },
        { type: 'mrkdwn', text: '*Node*\n{{nodeDescription}} {{clusterName}}' },
      ],
    },
    {
      type: 'context',
      elements: [{ type: 'mrkdwn', text: '{{#nodeLabels}}{{key}}={{value}} {{/nodeLabels}}{{notBefore}}' }],
    },
  ],
  attachments: [
    { fallback: '{{event.Description}}', text: '{{event.EventId}} {{vm.name}}', color: 'warning' },
  ],
};

const TEAMS_TEMPLATE = {
  type: 'AdaptiveCard',
  version: '1.4',
  body: [
    { type: 'TextBlock', wrap: true, text: '{{emoji}} {{title}}' },
    { type: 'TextBlock', wrap: true, text: '{{event.Description}}' },
    {
      type: 'FactSet',
      facts: [
        { title: '{{event.EventType}}', value: '{{event.EventId}}' },
        { title: 'Resources', value: '{{resources}}' },
        {
          title: 'Node',
          value: '{{nodeName}} {{clusterName}} {{#nodeLabels}}{{key}}={{value}}{{/nodeLabels}}',
        },
        { title: 'Source', value: '{{event.EventSource}} {{vmDescription}} {{summary}}' },
      ],
    },
  ],
  actions: [{ type: 'Action.OpenUrl', title: 'Open {{vmName}}', url: '{{portalUrl}}' }],
};

describe('IMDS fields are escaped wherever they land in Slack and Teams messages', () => {
  it('a real run child delivers hostile IMDS fields: no mention, link or Markdown forms from them in any string', async () => {
    const hooks = await HttpSinkServer.start();
    closers.push(() => hooks.close());
    const k8s: KubernetesDouble = await startKubernetesDouble({
      nodes: [nodeFixture(NODE)],
    });
    closers.push(() => k8s.close());
    const sim: RunningSimulator = await startSimulator({ vmName: VM, timeScale: 0 });
    closers.push(() => sim.close());

    const slackTemplate = join(tmp.dir, 'slack.mustache.json');
    writeFileSync(slackTemplate, JSON.stringify(SLACK_TEMPLATE));
    const slackNoText = join(tmp.dir, 'slack-no-text.mustache.json');
    writeFileSync(slackNoText, JSON.stringify({ blocks: SLACK_TEMPLATE.blocks }));
    const teamsTemplate = join(tmp.dir, 'teams.mustache.json');
    writeFileSync(teamsTemplate, JSON.stringify(TEAMS_TEMPLATE));
    const chat = (name: string, type: string, extra: Record<string, unknown> = {}) => ({
      name,
      type,
      url: hooks.url(`/${name}`),
      minIntervalMs: 0,
      filter: { scope: 'all' },
      ...extra,
    });
    const config = join(tmp.dir, 'forwarder.yaml');
    writeFileSync(
      config,
      stringify({
        stateDir: join(tmp.dir, 'state'),
        imds: { endpoint: sim.url, pollIntervalMs: 200 },
        kubernetes: {
          enabled: true,
          clusterName: CLUSTER,
          events: false,
          condition: false,
          kubeconfig: writeKubeconfig(join(tmp.dir, 'kubeconfig'), k8s, k8s.adminToken),
        },
        sinks: [
          chat('slack', 'slack'),
          chat('teams', 'teams'),
          chat('slack-tpl', 'slack', { template: slackTemplate }),
          chat('slack-no-text', 'slack', { template: slackNoText }),
          chat('teams-tpl', 'teams', { template: teamsTemplate }),
        ],
      }),
    );
    const child = spawnCli(['run', '--config', config], { NODE_NAME: NODE });
    children.push(child);
    await child.ready;
    sim.admin.injectEvent({
      EventId: EVENT_ID,
      EventType: EVENT_TYPE,
      Description: DESCRIPTION,
      EventSource: EVENT_SOURCE,
      Resources: [VM, RESOURCE_2],
      noticeSeconds: '15m',
    });
    const paths = ['/slack', '/teams', '/slack-tpl', '/slack-no-text', '/teams-tpl'];
    await waitFor(
      () => paths.every((p) => hooks.requests.some((r) => r.url === p)),
      `every sink to deliver (forwarder log: ${child.stderr().slice(-1500)})`,
      { timeoutMs: 60_000, intervalMs: 50 },
    );
    const received = (path: string) => JSON.parse(hooks.requests.find((r) => r.url === path)!.body);

    for (const path of ['/slack', '/slack-tpl', '/slack-no-text']) {
      const message = received(path);
      const all = JSON.stringify(message);
      // The hostile fields did arrive (escaped) in every part: text, header, sections, fields, context.
      expect(all, path).toContain('&lt;!channel&gt;');
      expect(all, path).toContain('&lt;!here&gt;');
      expect(all, path).toContain('&lt;@U999&gt;');
      expect(all, path).toContain('&lt;@U42&gt;');
      expect(message.text, path).toContain('&lt;!channel&gt;');
      expect(message.text, path).toContain('vm-&lt;!here&gt;');
      expect(slackProblems(message), path).toEqual([]);
    }
    expect(received('/slack').blocks[0].text.text).toContain('Reboot &lt;!here&gt; _urgent_');
    expect(received('/slack-tpl').attachments[0].fallback).toContain('Maintenance &lt;!channel&gt;');
    // An IMDS value that already looks like an entity is shown as typed, not decoded into a mention.
    expect(received('/slack').blocks[1].text.text).toContain('&amp;lt;!channel&amp;gt;');

    for (const path of ['/teams', '/teams-tpl']) {
      const message = received(path);
      const card = message.attachments[0].content;
      expect(adaptiveCardProblems(card), path).toEqual([]);
      expect(JSON.stringify(card), path).toContain('\\\\[cluster\\\\](https://evil.example)');
      expect(teamsProblems(message), path).toEqual([]);
    }
    // The texts read as the values: the Event ID fact shows the EventId itself, the description its lines.
    const facts = received('/teams').attachments[0].content.body[2].facts as Array<{
      title: string;
      value: string;
    }>;
    expect(shownText(facts.find((f) => f.title === 'Event ID')!.value)).toBe(EVENT_ID);
    expect(shownText(facts.find((f) => f.title === 'Event type')!.value)).toBe(EVENT_TYPE);
    expect(shownText(facts.find((f) => f.title === 'Kubernetes node')!.value)).toBe(
      `${NODE} (cluster ${CLUSTER})`,
    );
    expect(shownText(received('/teams').attachments[0].content.body[1].text)).toBe(
      DESCRIPTION.replace(/\n/g, ' '),
    );
    const tplFacts = received('/teams-tpl').attachments[0].content.body[2].facts;
    expect(shownText(tplFacts[0].title)).toBe(EVENT_TYPE);
    expect(shownText(tplFacts[0].value)).toBe(EVENT_ID);
    expect(shownText(tplFacts[2].value)).toBe(`${NODE} ${CLUSTER}`);
    // URL properties take the value as it is (the portal link must stay a working URL).
    expect(received('/teams-tpl').attachments[0].content.actions[0].url).toMatch(
      /^https:\/\/portal\.azure\.com\/#@\/resource\/subscriptions\//,
    );

    child.child.kill('SIGTERM');
    expect(await child.exited).toEqual({ code: 0, signal: null });
  });

  /**
   * Delivers the record with a real Slack and a real Teams sink (each with its template file, if given) to an
   * HTTP receiver; the bodies they sent.
   */
  let templateFiles = 0;
  async function deliverToSlackAndTeams(
    record: LifecycleRecord,
    templates: { slack?: string; teams?: string },
  ): Promise<[slack: SlackBody, teams: TeamsBody]> {
    const hooks = await HttpSinkServer.start();
    closers.push(() => hooks.close());
    const file = (name: string, text: string | undefined) => {
      if (text === undefined) return {};
      const path = join(tmp.dir, `${name}-${++templateFiles}.mustache.json`);
      writeFileSync(path, text);
      return { template: path };
    };
    const options = { url: hooks.url('/hook'), minIntervalMs: 0 };
    const slack = createSlackSink(
      's',
      slackOptionsSchema().parse({ ...options, ...file('slack', templates.slack) }),
      context(),
      { clock: fakeClock() },
    );
    const teams = createTeamsSink(
      't',
      teamsOptionsSchema().parse({ ...options, ...file('teams', templates.teams) }),
      context(),
      { clock: fakeClock() },
    );
    await slack.deliver([record], signal());
    await teams.deliver([record], signal());
    await slack.close?.();
    await teams.close?.();
    const [slackBody, teamsBody] = hooks.requests.map((r) => JSON.parse(r.body));
    return [slackBody as SlackBody, teamsBody as TeamsBody];
  }

  it('{{{name}}} inserts the value raw (documented as unsafe), {{name}} escaped', async () => {
    const record = makeRecord('scheduled', { eventId: '<!channel> **x**' });
    const [slackBody, teamsBody] = await deliverToSlackAndTeams(record, {
      slack: '{"text": "{{{event.EventId}}} / {{event.EventId}}"}',
      teams:
        '{"type":"AdaptiveCard","version":"1.4","body":[{"type":"TextBlock","text":"{{{event.EventId}}} / {{event.EventId}}"}]}',
    });
    expect(slackBody.text).toBe('<!channel> **x** / &lt;!channel&gt; **x**');
    expect(teamsBody.attachments[0]!.content.body[0]!.text).toBe(
      '<!channel> **x** / \\<\\!channel\\> \\*\\*x\\*\\*',
    );
  });

  it('portalUrl is percent-encoded: a resource group with a space and # keeps the Slack link and the Teams action whole', async () => {
    const record = structuredClone(makeRecord('scheduled'));
    record.data.vm.resourceId =
      '/subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/rg blue #1/providers/Microsoft.Compute/virtualMachines/vm-web-01';
    const encoded =
      'https://portal.azure.com/#@/resource/subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/' +
      'rg%20blue%20%231/providers/Microsoft.Compute/virtualMachines/vm-web-01';
    const [slackBody, teamsBody] = await deliverToSlackAndTeams(record, {
      slack: '{"text": "<{{portalUrl}}|open {{vmName}}>"}',
    });
    expect(slackBody.text).toBe(`<${encoded}|open vm-web-01>`);
    expect(teamsBody.attachments[0]!.content.actions).toEqual([
      { type: 'Action.OpenUrl', title: 'Open VM in portal', url: encoded },
    ]);
  });
});
