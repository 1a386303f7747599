/**
 * A value built on first use, then kept. Start-up must stay lean (docs/install.md, "Memory and start-up"):
 * a module that the config schema, the sink registry or `--help` loads constructs nothing heavy at module level
 * (a zod schema costs kilobytes per node); it exports `lazy(() => build())` and callers call it. Sink option
 * schemas are built this way, so a sink type that is not configured costs nothing but its module's source.
 */
export function lazy<T>(build: () => T): () => T {
  let value: T | undefined;
  let built = false;
  return () => {
    if (!built) {
      value = build();
      built = true;
    }
    return value as T;
  };
}
