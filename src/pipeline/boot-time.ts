/**
 * The host's boot time (epoch ms), which the transform compares with the last observation to recognise a
 * host reboot. Read once per process: now − os.uptime().
 */
import { uptime } from 'node:os';

/**
 * TEST-ONLY: an epoch-ms boot time that replaces the real one, so integration tests can simulate a host reboot
 * with real processes. Never set it in production.
 */
export const TEST_BOOT_TIME_ENV = 'SEF_TEST_BOOT_TIME_MS';

/** Host boot time in epoch ms (rounded to the second, so repeated reads agree). */
export function hostBootTimeMs(
  env: Record<string, string | undefined> = process.env,
  nowMs: number = Date.now(),
  uptimeSeconds: number = uptime(),
): number {
  const override = env[TEST_BOOT_TIME_ENV];
  if (override !== undefined && override !== '') {
    const value = Number(override);
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new Error(`${TEST_BOOT_TIME_ENV} must be epoch milliseconds, got "${override}"`);
    }
    return value;
  }
  return Math.round((nowMs - uptimeSeconds * 1000) / 1000) * 1000;
}
