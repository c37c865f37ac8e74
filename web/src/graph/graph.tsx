/** The Graph view: search the knowledge graph, expand nodes, browse communities, query traces. */
import type { ViewProps } from "../view";

export function GraphView(_props: ViewProps) {
  return <p class="muted">The Graph view is being built.</p>;
}
