/**
 * The Graph view: search the knowledge graph, expand nodes, browse communities, query traces.
 * Its code (sigma, graphology, the layout) is a chunk of its own, loaded on first use, so the
 * Ask view's first load stays small.
 */
import type { ComponentType } from "preact";
import { useEffect, useState } from "preact/hooks";
import type { ViewProps } from "../view";

let loaded: ComponentType<ViewProps> | null = null;

export function GraphView(props: ViewProps) {
  const [View, setView] = useState<ComponentType<ViewProps> | null>(() => loaded);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (loaded) return;
    import("./explorer").then(
      (module) => {
        loaded = module.default;
        setView(() => module.default);
      },
      (exc: unknown) => setError(exc instanceof Error ? exc.message : String(exc)),
    );
  }, []);
  if (error) return <p class="problem" role="alert">The Graph view could not be loaded: {error}. Reload the page.</p>;
  return View ? <View {...props} /> : <p class="muted">Loading the Graph view…</p>;
}
