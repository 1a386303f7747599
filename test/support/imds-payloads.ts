/**
 * Scheduled Events payload varieties seen in the field and in Microsoft's documents (see
 * docs/sources.md). Exact strings, including their formatting, so parsing is tested on real shapes.
 */

/** The documents' live-migration example as seen by one VM: 4 documents. */
export const LIVE_MIGRATION = [
  '{"DocumentIncarnation": 1, "Events": []}',
  '{"DocumentIncarnation": 2, "Events": [{"EventId": "C7061BAC-AFDC-4513-B24B-AA5F13A16123", "EventStatus": "Scheduled", "EventType": "Freeze", "ResourceType": "VirtualMachine", "Resources": ["WestNO_0", "WestNO_1"], "NotBefore": "Mon, 11 Apr 2022 22:26:58 GMT", "Description": "Virtual machine is being paused because of a memory-preserving Live Migration operation.", "EventSource": "Platform", "DurationInSeconds": 5}]}',
  '{"DocumentIncarnation": 3, "Events": [{"EventId": "C7061BAC-AFDC-4513-B24B-AA5F13A16123", "EventStatus": "Started", "EventType": "Freeze", "ResourceType": "VirtualMachine", "Resources": ["WestNO_0", "WestNO_1"], "NotBefore": "", "Description": "Virtual machine is being paused because of a memory-preserving Live Migration operation.", "EventSource": "Platform", "DurationInSeconds": 5}]}',
  '{"DocumentIncarnation": 4, "Events": []}',
] as const;

/** PowerShell ConvertTo-Json formatting: two spaces after colons, blank line in an empty array. */
export const POWERSHELL_EMPTY =
  '{\r\n    "DocumentIncarnation":  0,\r\n    "Events":  [\r\n\r\n               ]\r\n}';

/** Current official example: "Mon, 11 Apr 2026" is a Saturday (wrong weekday). */
export const WRONG_WEEKDAY = JSON.stringify({
  DocumentIncarnation: 16,
  Events: [
    {
      EventId: 'f020ba2e-3bc0-4c40-a10b-86575a9eabd5',
      EventType: 'Freeze',
      ResourceType: 'VirtualMachine',
      Resources: ['FrontEnd_IN_0', 'BackEnd_IN_0'],
      EventStatus: 'Scheduled',
      NotBefore: 'Mon, 11 Apr 2026 22:26:58 GMT',
      Description: 'Virtual machine is being paused because of a memory-preserving Live Migration operation.',
      EventSource: 'Platform',
      DurationInSeconds: 5,
    },
  ],
});

/** api-version 2017-11-01: no Description, EventSource or DurationInSeconds; string incarnation. */
export const OLD_API_VERSION = JSON.stringify({
  DocumentIncarnation: '1',
  Events: [
    {
      EventId: 'E92E64F9-XXXX-4D2C-9EB5-3D3B7F0B1E61',
      EventType: 'Preempt',
      ResourceType: 'VirtualMachine',
      Resources: ['myspot_0'],
      EventStatus: 'Scheduled',
      NotBefore: 'Tue, 02 Jul 2019 07:43:07 GMT',
    },
  ],
});

/** Hardware failure: straight to Started, lower-case casing, NotBefore missing, Resources missing. */
export const ODD_CASING = JSON.stringify({
  DocumentIncarnation: 28,
  Events: [
    {
      EventId: '4a5b8c1f-2b8e-4d5c-9f6a-7b3c2d1e0f9a',
      EventType: 'reboot',
      ResourceType: 'VirtualMachine',
      EventStatus: 'STARTED',
      Description: 'Host server is undergoing maintenance.',
      EventSource: 'platform',
      DurationInSeconds: -1,
    },
  ],
});

/** Mock servers' ISO 8601 NotBefore, an unknown EventType, an unknown field, a string duration. */
export const ISO_AND_UNKNOWN = JSON.stringify({
  DocumentIncarnation: 190,
  Events: [
    {
      EventId: 'b1c2d3e4-0000-1111-2222-333344445555',
      EventType: 'Hibernate',
      ResourceType: 'VirtualMachine',
      Resources: ['vm-1'],
      EventStatus: 'Scheduled',
      NotBefore: '2024-01-15T10:00:00Z',
      Description: '',
      EventSource: 'User',
      DurationInSeconds: '30',
      OSImageVersion: '1.2.3',
    },
  ],
});

/** Two simultaneous events for two VMs of an availability set (Azure-Samples branch capture). */
export const TWO_EVENTS = JSON.stringify({
  DocumentIncarnation: 2,
  Events: [
    {
      EventId: 'A123BC45-1234-5678-AB90-ABCDEF123456',
      EventStatus: 'Scheduled',
      EventType: 'Reboot',
      ResourceType: 'VirtualMachine',
      Resources: ['sample_4'],
      NotBefore: 'Thu, 07 Dec 2017 05:23:12 GMT',
    },
    {
      EventId: 'B123BC45-1234-5678-AB90-ABCDEF123456',
      EventStatus: 'Scheduled',
      EventType: 'Reboot',
      ResourceType: 'VirtualMachine',
      Resources: ['sample_1'],
      NotBefore: 'Thu, 07 Dec 2017 05:23:12 GMT',
    },
  ],
});

/** Answers that are not Scheduled Events documents, with the problem the error must name. */
export const INVALID_BODIES: ReadonlyArray<{ name: string; body: string; problem: RegExp }> = [
  { name: 'empty 200 body', body: '', problem: /empty body/ },
  { name: 'whitespace only', body: ' \r\n ', problem: /empty body/ },
  {
    name: 'HTML page from a proxy',
    body: '<!DOCTYPE html><html><head><title>Access denied</title></head><body>Proxy says no</body></html>',
    problem: /HTML/,
  },
  { name: 'truncated JSON', body: LIVE_MIGRATION[1].slice(0, 80), problem: /not valid JSON/ },
  { name: 'plain text', body: 'Service Unavailable', problem: /not valid JSON/ },
  { name: 'JSON array', body: '[]', problem: /not a JSON object/ },
  {
    name: 'Events not an array',
    body: '{"DocumentIncarnation":1,"Events":{}}',
    problem: /Events is not an array/,
  },
  { name: 'Events missing', body: '{"DocumentIncarnation":1}', problem: /Events is missing/ },
  {
    name: 'event without EventId',
    body: '{"DocumentIncarnation":1,"Events":[{"EventType":"Reboot","EventStatus":"Scheduled"}]}',
    problem: /Events\[0\] has no EventId/,
  },
  {
    name: 'non-numeric DocumentIncarnation',
    body: '{"DocumentIncarnation":"abc123","Events":[]}',
    problem: /invalid DocumentIncarnation/,
  },
  { name: 'missing DocumentIncarnation', body: '{"Events":[]}', problem: /no DocumentIncarnation/ },
];
