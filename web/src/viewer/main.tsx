/**
 * The standalone graph viewer (viewer.html): draws the graph embedded in the page as
 * `<script type="application/json" id="ukr-graph">` with the Graph view's canvas, a node list and
 * a panel of the selected node. No network: `ukr graph export --format html` inlines this page,
 * its one script and its one stylesheet with the graph into a single file.
 */
import { render } from "preact";
import { useMemo, useState } from "preact/hooks";
import { GraphCanvas, Legend, NodeList } from "../graph/canvas";
import {
  assignColours,
  communityName,
  hasTrace,
  sliceTitle,
  sourcesNote,
  truncationNote,
  type ColourMode,
  type SerializedGraph,
} from "../graph/model";
import "./viewer.css";

/** The embedded graph, or an error message. */
export function readEmbedded(doc: Document): SerializedGraph | string {
  const text = doc.getElementById("ukr-graph")?.textContent ?? "";
  try {
    const graph = JSON.parse(text) as SerializedGraph;
    if (!Array.isArray(graph.nodes) || !Array.isArray(graph.edges)) return "the embedded graph has no nodes or edges list";
    graph.attributes ??= {};
    graph.options ??= { type: "undirected", multi: false };
    return graph;
  } catch (exc) {
    return `the embedded graph is not JSON (${exc instanceof Error ? exc.message : String(exc)})`;
  }
}

function Viewer({ graph }: { graph: SerializedGraph }) {
  const [selected, setSelected] = useState<string | null>(null);
  const [mode, setMode] = useState<ColourMode>("community");
  const legend = useMemo(() => assignColours(graph, mode).legend, [graph, mode]);
  const node = graph.nodes.find((n) => n.key === selected) ?? null;
  const note = truncationNote(graph);
  const extra = node
    ? Object.entries(node.attributes).filter(
        ([k, v]) => !["label", "entity_type", "description", "sources", "trace", "x", "y", "size", "color"].includes(k) && v !== null && typeof v !== "object",
      )
    : [];
  const came = node ? sourcesNote(node.attributes) : null;
  const traced = useMemo(() => hasTrace(graph), [graph]);
  // a trace's communities carry titles; other communities are named by a short id
  const names = useMemo(
    () => new Map((graph.attributes.communities ?? []).map((c) => [c.id, communityName(c)] as [string, string])),
    [graph],
  );
  const shown = (k: string, v: unknown) => (k === "community" ? (names.get(String(v)) ?? communityName({ id: String(v) })) : String(v));
  return (
    <div class="viewer">
      <main>
        <h1>{sliceTitle(graph, names)}</h1>
        <p role="status">
          {graph.nodes.length} nodes, {graph.edges.length} edges{note ? ` · ${note}` : ""}
        </p>
        <fieldset class="colour-mode">
          <legend>Colour by</legend>
          <label>
            <input type="radio" name="colour" checked={mode === "community"} onChange={() => setMode("community")} /> community
          </label>
          <label>
            <input type="radio" name="colour" checked={mode === "type"} onChange={() => setMode("type")} /> type
          </label>
        </fieldset>
        <GraphCanvas graph={graph} colourMode={mode} selected={selected} onSelect={setSelected} label={`Graph of ${graph.nodes.length} nodes`} />
        <Legend
          entries={legend}
          mode={mode}
          names={names}
          traced={traced}
          dimmed={traced && graph.nodes.some((n) => n.attributes.trace !== true)}
        />
        <NodeList graph={graph} selected={selected} onSelect={setSelected} />
      </main>
      <aside class="graph-panel" aria-labelledby="node-heading">
        {node ? (
          <>
            <h2 id="node-heading">{node.attributes.label}</h2>
            {came ? <p class="trace-note">{came}</p> : null}
            <p class="muted">{node.attributes.entity_type ?? ""}</p>
            {node.attributes.description ? <p>{node.attributes.description}</p> : null}
            <dl>
              {extra.map(([k, v]) => (
                <>
                  <dt>{k}</dt>
                  <dd>{shown(k, v)}</dd>
                </>
              ))}
            </dl>
          </>
        ) : (
          <p id="node-heading">Select a node to read it.</p>
        )}
      </aside>
    </div>
  );
}

const root = document.getElementById("viewer");
if (root) {
  const graph = readEmbedded(document);
  render(typeof graph === "string" ? <p role="alert">Cannot draw: {graph}</p> : <Viewer graph={graph} />, root);
}
