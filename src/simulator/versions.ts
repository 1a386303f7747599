/**
 * IMDS api-version rules for the simulator: which versions exist and which event fields and event types
 * each version shows (see docs/simulator.md and the Scheduled Events reference).
 */

/** Scheduled Events api-versions, oldest first (the reference's version list). */
export const SCHEDULED_EVENTS_API_VERSIONS = [
  '2017-03-01',
  '2017-08-01',
  '2017-11-01',
  '2019-01-01',
  '2019-04-01',
  '2019-08-01',
  '2020-07-01',
] as const;

/** Instance metadata api-versions the simulator accepts (a representative subset of Azure's list). */
export const INSTANCE_API_VERSIONS = [
  '2017-03-01',
  '2017-04-02',
  '2017-08-01',
  '2017-10-01',
  '2017-12-01',
  '2018-02-01',
  '2018-04-02',
  '2018-10-01',
  '2019-02-01',
  '2019-03-11',
  '2019-04-30',
  '2019-06-01',
  '2019-06-04',
  '2019-08-01',
  '2019-08-15',
  '2019-11-01',
  '2020-06-01',
  '2020-07-15',
  '2020-09-01',
  '2020-10-01',
  '2020-12-01',
  '2021-01-01',
  '2021-02-01',
  '2021-03-01',
  '2021-05-01',
  '2021-10-01',
  '2021-11-01',
  '2021-11-15',
  '2021-12-13',
  '2022-02-01',
  '2022-03-01',
  '2022-07-01',
  '2022-08-01',
  '2022-11-01',
  '2023-07-01',
  '2023-11-15',
  '2024-03-15',
  '2025-04-07',
] as const;

/** Managed identity token api-versions the simulator accepts (MSAL uses 2018-02-01). */
export const IDENTITY_API_VERSIONS = ['2018-02-01', '2019-08-01'] as const;

/** What a given Scheduled Events api-version shows. */
export interface VersionFeatures {
  /** 2017-03-01 prefixes IaaS resource names with "_" (removed in 2017-08-01). */
  underscoreResourceNames: boolean;
  preempt: boolean;
  terminate: boolean;
  description: boolean;
  eventSource: boolean;
  durationInSeconds: boolean;
}

/** Field and event-type availability for a (valid) Scheduled Events api-version. */
export function featuresOf(apiVersion: string): VersionFeatures {
  return {
    underscoreResourceNames: apiVersion < '2017-08-01',
    preempt: apiVersion >= '2017-11-01',
    terminate: apiVersion >= '2019-01-01',
    description: apiVersion >= '2019-04-01',
    eventSource: apiVersion >= '2019-08-01',
    durationInSeconds: apiVersion >= '2020-07-01',
  };
}

/** The newest few versions, as IMDS lists them in its "bad api-version" error. */
export function newestVersions(list: readonly string[], count = 3): string[] {
  return [...list].reverse().slice(0, count);
}
