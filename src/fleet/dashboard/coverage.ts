/**
 * The dashboard API of coverage (src/fleet/history/coverage.ts, docs/fleet.md "Coverage"), routed from
 * server.ts's switch like the operator views (./views.ts), with the same helpers (ViewTools):
 *
 * - `/api/coverage`: VMs by state (reporting, silent, unhealthy, gone), by forwarder version, region and scale
 *   set; VMs without a heartbeat; each partition's read-through and lag; the first `limit` (default 100) silent
 *   VMs (longest quiet first) and unhealthy VMs, each with when it was last seen and why. Filters: location,
 *   zone, scaleSet, vm.
 * - `/api/coverage/vms?state=silent|unhealthy|gone|reporting`: every VM in that state, paged (Link /
 *   X-Next-Cursor, X-Total-Count).
 * - `/api/coverage/days?vm=…&since&until`: the days (and UTC hours) one VM sent heartbeats; 404 when it never did.
 * - `/api/coverage/covered?since&until&location&zone&scaleSet`: `{ coveredVms }`, the VMs that sent a heartbeat in
 *   the window: what the dashboard shows on every maintenance view (the summary, the time series, the lead time
 *   and the blast radius carry it too).
 */
import type { ServerResponse } from 'node:http';
import { COVERAGE_STATES, type CoverageState, type FleetHistory } from '../history/index.ts';
import type { ViewTools } from './views.ts';

export const COVERAGE_ROUTES = [
  '/api/coverage',
  '/api/coverage/vms',
  '/api/coverage/days',
  '/api/coverage/covered',
] as const;

function stateParameter(params: URLSearchParams, tools: ViewTools): CoverageState {
  const value = params.get('state') ?? '';
  if (!(COVERAGE_STATES as readonly string[]).includes(value))
    throw new tools.BadRequest('state', `state must be one of ${COVERAGE_STATES.join(', ')}: ${value}`);
  return value as CoverageState;
}

/** Answers one of COVERAGE_ROUTES (`url.pathname`). */
export async function sendCoverage(
  res: ServerResponse,
  url: URL,
  history: FleetHistory,
  tools: ViewTools,
): Promise<void> {
  const params = url.searchParams;
  const filter = tools.filterFromQuery(params);
  const scope = { location: filter.location, zone: filter.zone, scaleSet: filter.scaleSet, vm: filter.vm };
  switch (url.pathname as (typeof COVERAGE_ROUTES)[number]) {
    case '/api/coverage':
      tools.json(res, await history.coverage(scope, tools.pageFromQuery(params).limit));
      return;
    case '/api/coverage/vms': {
      const page = await history.coverageVms(
        stateParameter(params, tools),
        scope,
        tools.pageFromQuery(params),
      );
      tools.sendPage(res, url, page, { 'x-total-count': String(page.total) });
      return;
    }
    case '/api/coverage/days': {
      const vm = params.get('vm');
      if (!vm) throw new tools.BadRequest('vm', 'vm (a VM name or CloudEvent source) is required');
      const days = await history.coverageDays(vm, { since: filter.since, until: filter.until });
      if (days === undefined) {
        tools.json(res, { error: `no heartbeat from VM ${vm}` }, {}, 404);
        return;
      }
      tools.json(res, days);
      return;
    }
    case '/api/coverage/covered':
      tools.json(res, {
        coveredVms: await history.coveredVms({
          since: filter.since,
          until: filter.until,
          location: filter.location,
          zone: filter.zone,
          scaleSet: filter.scaleSet,
        }),
      });
      return;
  }
  tools.json(res, { error: 'not found' }, {}, 404);
}
