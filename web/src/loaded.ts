/** Something read from the API for a view: loading, ready with its value, or failed. */
import { useEffect, useState } from "preact/hooks";

export type Loaded<T> = { state: "loading" } | { state: "ready"; value: T } | { state: "failed"; error: unknown };

/**
 * Read with `load` when one of `deps` changes (the previous read is aborted); null while
 * there is no `load`. `onError` hears every failure (a 401: the page asks for a key).
 */
export function useLoaded<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[], onError?: (error: unknown) => void): Loaded<T>;
export function useLoaded<T>(
  load: ((signal: AbortSignal) => Promise<T>) | null,
  deps: unknown[],
  onError?: (error: unknown) => void,
): Loaded<T> | null;
export function useLoaded<T>(
  load: ((signal: AbortSignal) => Promise<T>) | null,
  deps: unknown[],
  onError?: (error: unknown) => void,
): Loaded<T> | null {
  const [out, setOut] = useState<Loaded<T> | null>(load ? { state: "loading" } : null);
  useEffect(() => {
    if (!load) {
      setOut(null);
      return;
    }
    const abort = new AbortController();
    setOut({ state: "loading" });
    load(abort.signal).then(
      (value) => !abort.signal.aborted && setOut({ state: "ready", value }),
      (error: unknown) => {
        if (abort.signal.aborted) return;
        onError?.(error);
        setOut({ state: "failed", error });
      },
    );
    return () => abort.abort();
  }, deps);
  return out;
}
