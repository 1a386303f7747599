/**
 * The Scheduled Events domain: one event of the IMDS document, the document, and the VM identity.
 * Imported by sources, transform, sinks and fleet; no I/O.
 */

/** One event of the Scheduled Events document, normalised by the tolerant parser. */
export interface ScheduledEvent {
  EventId: string;
  /** Canonical casing for known values (Freeze, Reboot, Redeploy, Preempt, Terminate); unknown values kept as received. */
  EventType: string;
  ResourceType: string;
  Resources: string[];
  /** Canonical casing for known values (Scheduled, Started); unknown values kept as received. */
  EventStatus: string;
  /** NotBefore exactly as received ("" when empty or missing). */
  NotBefore: string;
  /** NotBefore parsed to an ISO 8601 UTC instant, or null when empty, missing or unparseable. */
  notBeforeUtc: string | null;
  /** "" when missing (api-version < 2019-04-01). */
  Description: string;
  /** Canonical casing for Platform / User; "" when missing (api-version < 2019-08-01). */
  EventSource: string;
  /** -1 when missing (api-version < 2020-07-01) or unknown. */
  DurationInSeconds: number;
  /** Fields IMDS sent that we do not know, kept verbatim. */
  extra?: Record<string, unknown>;
}

export interface ScheduledEventsDocument {
  DocumentIncarnation: number;
  Events: ScheduledEvent[];
}

/** The VM identity from the instance metadata endpoint (compute section). Missing values are "". */
export interface VmIdentity {
  name: string;
  vmId: string;
  resourceId: string;
  subscriptionId: string;
  resourceGroupName: string;
  location: string;
  zone: string;
  vmScaleSetName: string;
  vmSize: string;
  osType: string;
  computerName: string;
}
