/**
 * Which sinks receive heartbeats (issue 33 item 1), with the real sink registry: Event Hubs (the fleet's path)
 * by default, file, webhook and stdout when they opt in, and never a sink whose every message reaches a person
 * or pages someone (Slack, Teams, PagerDuty, Alertmanager) nor Azure Monitor or OTel logs: `heartbeats: true`
 * there is a configuration error naming the sink.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, validateConfig } from '../../../src/config/index.ts';

const HUB =
  'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=a2V5;EntityPath=m';

function problemsOf(sink: Record<string, unknown>): string[] {
  try {
    validateConfig({ sinks: [{ name: 'a', ...sink }] });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return [...(error as ConfigError).problems];
  }
  return [];
}

describe('heartbeats per sink type', () => {
  it.each(['slack', 'teams', 'pagerduty', 'alertmanager', 'azuremonitor', 'otel'])(
    '%s never receives them: heartbeats: true is refused',
    (type) => {
      const problems = problemsOf({ type, heartbeats: true });
      expect(problems.filter((p) => p.startsWith('sinks[0].heartbeats:'))).toEqual([
        expect.stringMatching(
          new RegExp(`^sinks\\[0\\]\\.heartbeats: ${type} sinks never receive heartbeats`),
        ),
      ]);
    },
  );

  it('Event Hubs receives them by default; file, webhook and stdout only when they opt in', () => {
    const config = validateConfig({
      sinks: [
        { name: 'hub', type: 'eventhubs', connectionString: HUB },
        { name: 'quiet-hub', type: 'eventhubs', connectionString: HUB, heartbeats: false },
        { name: 'file', type: 'file', path: '/tmp/x.jsonl' },
        { name: 'file-beats', type: 'file', path: '/tmp/y.jsonl', heartbeats: true },
        { name: 'hook', type: 'webhook', url: 'https://example.invalid/hook' },
        { name: 'out', type: 'stdout', heartbeats: true },
      ],
    });
    expect(Object.fromEntries(config.sinks.map((s) => [s.name, s.heartbeats]))).toEqual({
      hub: true,
      'quiet-hub': false,
      file: false,
      'file-beats': true,
      hook: false,
      out: true,
    });
  });
});
