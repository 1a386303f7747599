/**
 * The endpoint URL rule every HTTP sink shares (webhook, Slack, Teams, Alertmanager, PagerDuty). Light on purpose:
 * options schemas load it.
 */
import type { Secret } from '../../secret.ts';

/**
 * Validates an HTTP sink URL (http or https) at configuration time (each sink's options schema) and when the sink is built.
 * Errors name only the sink and where the URL came from, never the URL.
 */
export function parseHttpSinkUrl(url: Secret, sinkName: string): URL {
  const problem = httpSinkUrlProblem(url);
  if (typeof problem === 'string') throw new Error(`sink ${sinkName}: ${problem}`);
  return problem;
}

export function httpSinkUrlProblem(url: Secret): URL | string {
  let parsed: URL;
  try {
    parsed = new URL(url.reveal());
  } catch {
    return `url (${url.origin}) is not a valid URL; expected an http:// or https:// URL`;
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    return `url (${url.origin}) must be an http:// or https:// URL, not ${parsed.protocol}`;
  }
  return parsed;
}
