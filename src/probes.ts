/**
 * The liveness answer of both HTTP servers with probes, the forwarder's telemetry listener (src/telemetry) and
 * the fleet's dashboard server (src/fleet/dashboard): `GET /healthz` → 200 with this body while the process runs.
 * One shape, so one probe definition and one documentation line fit both.
 */
export const LIVENESS_BODY = { status: 'alive' } as const;
