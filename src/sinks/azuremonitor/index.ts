/**
 * The Azure Monitor sink folder's public surface (layout: docs/sinks.md). The registry imports factory.ts only;
 * importing this file loads the implementation, the Azure SDKs included (client.ts).
 */

export { createIngestionClient, redactingCredential } from './client.ts';
export { LOG_COLUMNS, type LogColumn, type LogColumnType, toLogRow } from './columns.ts';
export { safeServiceText, uploadError } from './errors.ts';
export { azureMonitorSinkFactory } from './factory.ts';
export { type AzureMonitorSinkOptions, azureMonitorOptionsSchema, DEFAULT_STREAM_NAME } from './options.ts';
export { AZURE_MONITOR_MAX_BATCH, AzureMonitorSink, MAX_REQUEST_BYTES } from './sink.ts';
