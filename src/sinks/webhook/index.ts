/**
 * The webhook, Slack and Teams sinks' public surface (layout: docs/sinks.md). The registry imports factory.ts
 * only; importing this file loads the implementation (sink.ts) and with it undici and the payload builders.
 */
export { slackSinkFactory, teamsSinkFactory, webhookSinkFactory } from './factory.ts';
export {
  CHAT_DEFAULT_FILTER,
  type SlackOptions,
  slackOptionsSchema,
  type TeamsOptions,
  teamsOptionsSchema,
  type WebhookOptions,
  webhookOptionsSchema,
} from './options.ts';
export { createGenericWebhookSink, createSlackSink, createTeamsSink } from './sink.ts';
