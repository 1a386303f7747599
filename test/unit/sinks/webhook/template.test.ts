/**
 * renderJsonTemplate renders for the target it is given (Slack mrkdwn, Teams Adaptive Card text, plain JSON):
 * each `{{name}}` value is escaped where it lands — text and keys for the target, URL properties as plain JSON,
 * numbers and booleans bare — with no marker characters in between; `{{{name}}}` stays raw. portalUrl
 * percent-encodes every segment of the resource ID.
 */
import { describe, expect, it } from 'vitest';
import { portalUrl } from '../../../../src/sinks/format.ts';
import { ESCAPE_TEXT, type TextTarget } from '../../../../src/sinks/webhook/escape.ts';
import { renderJsonTemplate } from '../../../../src/sinks/webhook/template.ts';
import { FIXTURE_VM, makeRecord } from '../../../support/records.ts';

const HOSTILE = 'Reboot <!here> *x* [a](b) & "quoted" \\ \uE000marked\uE001';
const record = makeRecord('scheduled', { eventType: HOSTILE });
const render = (text: string, target: TextTarget) =>
  renderJsonTemplate({ path: 'test.json', text }, record, 'sink t', target);

/** The escaped form of `text` for a target (what a text property must hold). */
const escaped = (target: TextTarget, text: string) => ESCAPE_TEXT[target](text);

describe('renderJsonTemplate', () => {
  it.each<TextTarget>(['slack', 'teams', 'json'])(
    '%s: text values, keys and array items get the target escaping; URL properties plain JSON; numbers bare',
    (target) => {
      const out = render(
        JSON.stringify({
          text: 'type {{event.EventType}}!',
          '{{event.EventType}}': 'key',
          elements: [
            '{{event.EventType}}',
            { image_url: '{{event.EventType}}', alt_text: '{{event.EventType}}' },
          ],
          actions: [
            { url: '{{event.EventType}}', iconUrl: '{{event.EventType}}', title: '{{event.EventType}}' },
          ],
        }).replace('"{{count}}"', '{{resourceCount}}'),
        target,
      );
      const text = escaped(target, HOSTILE);
      expect(out).toEqual({
        text: `type ${text}!`,
        [text]: 'key',
        elements: [text, { image_url: HOSTILE, alt_text: text }],
        actions: [{ url: HOSTILE, iconUrl: HOSTILE, title: text }],
      });
    },
  );

  it('keeps numbers and booleans bare, {{{name}}} raw, and escapes in sections like elsewhere', () => {
    const out = render(
      '{"n": {{resourceCount}}, "mine": {{event.affectsThisVm}}, "raw": "<{{{transition}}}>", ' +
        '"list": "{{#event.Resources}}[{{.}}]{{/event.Resources}}", "t": "{{#event}}{{EventType}}{{/event}}", ' +
        '"after": {"url": "{{portalUrl}}"}}',
      'slack',
    );
    expect(out).toEqual({
      n: 1,
      mine: true,
      raw: '<scheduled>',
      list: '[vm-web-01]',
      t: escaped('slack', HOSTILE),
      after: { url: portalUrl(record) },
    });
  });

  it('leaves no marker characters: a value that holds U+E000/U+E001 arrives as it is', () => {
    const out = render('{"text": "{{event.EventType}}", "url": "{{event.EventType}}"}', 'teams');
    expect(out).toEqual({ text: escaped('teams', HOSTILE), url: HOSTILE });
    expect(escaped('teams', HOSTILE)).toContain('\uE000marked\uE001');
  });

  it('follows the JSON text: an escaped quote or brace in a value does not move a URL property', () => {
    const out = render(
      '{"title": "{{event.EventType}} } ] {", "nested": [{"u": 1, "url": "{{event.EventType}}"}], "text": "{{event.EventType}}"}',
      'slack',
    );
    expect(out).toEqual({
      title: `${escaped('slack', HOSTILE)} } ] {`,
      nested: [{ u: 1, url: HOSTILE }],
      text: escaped('slack', HOSTILE),
    });
  });

  it('names the template file when the result is not JSON', () => {
    expect(() => render('{"text": {{event.EventType}}}', 'slack')).toThrow(
      /sink t: template test\.json did not render to valid JSON/,
    );
  });
});

describe('portalUrl', () => {
  it('percent-encodes each segment, so a resource group or VM name with a space, # or | keeps the link whole', () => {
    // Set on the record itself: the fixture's transform would refuse such a resource ID as the CloudEvent source.
    const resourceId =
      '/subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/rg blue #1/providers/Microsoft.Compute/virtualMachines/vm|web>1';
    const hostile = structuredClone(makeRecord('scheduled'));
    hostile.data.vm.resourceId = resourceId;
    const url = portalUrl(hostile)!;
    expect(url).toBe(
      'https://portal.azure.com/#@/resource/subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/' +
        'rg%20blue%20%231/providers/Microsoft.Compute/virtualMachines/vm%7Cweb%3E1',
    );
    const parsed = new URL(url);
    expect(parsed.hash.split('/').map(decodeURIComponent).join('/')).toBe(`#@/resource${resourceId}`);
    expect(url).not.toMatch(/[\s|<>]|#.*#/);
  });

  it('is unchanged for an ordinary resource ID, and null without one', () => {
    expect(portalUrl(makeRecord('scheduled'))).toBe(
      `https://portal.azure.com/#@/resource${FIXTURE_VM.resourceId}`,
    );
    expect(portalUrl(makeRecord('scheduled', { vm: { ...FIXTURE_VM, resourceId: '' } }))).toBeNull();
  });
});
