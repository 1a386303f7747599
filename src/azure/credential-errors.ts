/**
 * How the Azure sinks (Event Hubs, Azure Monitor) read a failed token request of @azure/identity: duck-typed, so
 * it loads without the SDK. A token endpoint that answers 4xx (a wrong client secret, an unknown client or
 * tenant, a federated token it does not accept) refuses the credential itself: permanent for the destination,
 * the sink pauses. Anything else (5xx, 408, 429, no answer, no managed identity endpoint yet) may pass and is
 * retried.
 */

/** What a refused credential means, and its fix (said once when the sink pauses). */
export const IDENTITY_REFUSED =
  'the identity provider refused the credential; fix: check the client id, tenant id and client secret (or the federated token) the sink signs in with';

/** True for an @azure/identity AuthenticationError whose token endpoint answered a 4xx other than 408/429. */
export function identityRefused(error: unknown): boolean {
  const e = error as { name?: unknown; statusCode?: unknown } | null;
  if (e === null || typeof e !== 'object') return false;
  if (e.name !== 'AuthenticationError' && e.name !== 'AuthenticationRequiredError') return false;
  const status = e.statusCode;
  return typeof status === 'number' && status >= 400 && status < 500 && status !== 408 && status !== 429;
}
