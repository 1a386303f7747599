/** Small HTTP helpers for simulator tests (real HTTP over 127.0.0.1). */
export const API = 'api-version=2020-07-01';
export const MD = { Metadata: 'true' };

export interface HttpAnswer {
  status: number;
  headers: Headers;
  text: string;
  json: () => unknown;
}

export async function http(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<HttpAnswer> {
  const response = await fetch(url, init);
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, json: () => JSON.parse(text) };
}

export interface DocEvent {
  EventId: string;
  EventStatus: string;
  EventType: string;
  NotBefore: string;
  Resources: string[];
  [key: string]: unknown;
}

export async function getDocument(
  base: string,
  apiVersion = '2020-07-01',
): Promise<{ DocumentIncarnation: number; Events: DocEvent[] }> {
  const answer = await http(`${base}/metadata/scheduledevents?api-version=${apiVersion}`, { headers: MD });
  if (answer.status !== 200) throw new Error(`GET document: ${answer.status} ${answer.text}`);
  return answer.json() as { DocumentIncarnation: number; Events: DocEvent[] };
}

export function postApproval(
  base: string,
  body: string,
  headers: Record<string, string> = MD,
): Promise<HttpAnswer> {
  return http(`${base}/metadata/scheduledevents?${API}`, {
    method: 'POST',
    headers: { ...headers, 'Content-Type': 'application/json' },
    body,
  });
}
