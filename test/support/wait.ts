/** Wait-for-condition helper: polls `check` until it returns a truthy value, or fails with `what` after `timeoutMs`. */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  what: string,
  { timeoutMs = 20_000, intervalMs = 10 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}`,
      );
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
