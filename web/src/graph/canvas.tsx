/**
 * `GraphCanvas`: a serialized graph drawn with sigma (WebGL), laid out by ForceAtlas2 in a web
 * worker for a bounded time; `NodeList`: the same nodes as buttons (keyboard and tests);
 * `Legend`: what the colours mean. Used by the Graph view and the standalone viewer.
 */
import Graph from "graphology";
import FA2Layout from "graphology-layout-forceatlas2/worker";
import forceAtlas2 from "graphology-layout-forceatlas2";
import Sigma from "sigma";
import { drawDiscNodeHover } from "sigma/rendering";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import {
  assignColours,
  DIMMED_EDGE_DARK,
  DIMMED_NODE_DARK,
  edgeStyle,
  legendName,
  hasTrace,
  layoutTime,
  nodeSize,
  nodeStyle,
  type ColourMode,
  type LegendEntry,
  type SerializedGraph,
} from "./model";
import "./graph.css";

/** How long the force layout runs before it is stopped (ms; longer for big graphs, `layoutTime`). */
export const LAYOUT_MS = 2500;
/** Above this many edges, edges are hidden while the camera moves (panning stays fluid). */
export const HIDE_EDGES_ABOVE = 2000;

export interface CanvasProps {
  graph: SerializedGraph;
  colourMode: ColourMode;
  selected: string | null;
  onSelect: (key: string) => void;
  /** Called with the node under the pointer, and null when it leaves. */
  onHover?: (key: string | null) => void;
  /** What the canvas shows, for screen readers (the node list is the accessible way in). */
  label: string;
  layoutMs?: number;
}

/** Whether the page is in its dark scheme (the canvas then takes the page's dark background). */
function darkScheme(): boolean {
  return typeof matchMedia === "function" && matchMedia("(prefers-color-scheme: dark)").matches;
}

/** A stable position from a key, so a graph opens in the same shape before the layout runs. */
function seed(key: string, salt: number): number {
  let h = 2166136261 ^ salt;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 16777619);
  return ((h >>> 0) % 10000) / 10000;
}

function toGraphology(graph: SerializedGraph): Graph {
  const g = new Graph({ type: graph.options.type, multi: graph.options.multi, allowSelfLoops: true });
  let maxDegree = 0;
  const degree = (a: Record<string, unknown>) => (typeof a["degree"] === "number" ? (a["degree"] as number) : 0);
  for (const n of graph.nodes) maxDegree = Math.max(maxDegree, degree(n.attributes));
  for (const n of graph.nodes) {
    if (g.hasNode(n.key)) continue;
    // a community's members start around a point of their own, so the first frame has shape
    const group = n.attributes.community ? String(n.attributes.community) : null;
    const at = group ? seed(group, 3) * 2 * Math.PI : 0;
    const [cx, cy] = group ? [100 * Math.cos(at), 100 * Math.sin(at)] : [0, 0];
    const angle = seed(n.key, 1) * 2 * Math.PI;
    const radius = (group ? 30 : 100) * Math.sqrt(seed(n.key, 2));
    g.addNode(n.key, {
      ...n.attributes,
      x: cx + radius * Math.cos(angle),
      y: cy + radius * Math.sin(angle),
      size: nodeSize(degree(n.attributes), maxDegree),
    });
  }
  for (const e of graph.edges) {
    if (!g.hasNode(e.source) || !g.hasNode(e.target)) continue;
    const attrs = { ...e.attributes, size: 1 };
    if (e.key !== undefined && !g.hasEdge(e.key)) g.addEdgeWithKey(e.key, e.source, e.target, attrs);
    else if (e.key === undefined && (graph.options.multi || !g.hasEdge(e.source, e.target))) g.addEdge(e.source, e.target, attrs);
  }
  return g;
}

/**
 * Runs ForceAtlas2 off the main thread for `ms`, else (no workers) a few synchronous rounds;
 * `done` is called when it stops.
 */
function layout(g: Graph, ms: number, done: () => void): () => void {
  if (g.order < 2) {
    done();
    return () => {};
  }
  const settings = { ...forceAtlas2.inferSettings(g), barnesHutOptimize: g.order > 500 };
  let worker: FA2Layout | null = null;
  try {
    worker = new FA2Layout(g, { settings });
    worker.start();
  } catch {
    forceAtlas2.assign(g, { iterations: g.order > 1000 ? 30 : 100, settings });
    done();
    return () => {};
  }
  const timer = setTimeout(() => {
    worker?.stop();
    done();
  }, ms);
  return () => {
    clearTimeout(timer);
    worker?.kill();
    worker = null;
  };
}

export function GraphCanvas({ graph, colourMode, selected, onSelect, onHover, label, layoutMs = LAYOUT_MS }: CanvasProps) {
  const box = useRef<HTMLDivElement>(null);
  const renderer = useRef<Sigma | null>(null);
  const state = useRef({ colours: new Map<string, string>(), traced: false, selected, hovered: null as string | null });
  const select = useRef(onSelect);
  select.current = onSelect;
  const hover = useRef(onHover);
  hover.current = onHover;
  const [failed, setFailed] = useState<string | null>(null);

  const { colours } = useMemo(() => assignColours(graph, colourMode), [graph, colourMode]);
  state.current.colours = colours;
  state.current.traced = useMemo(() => hasTrace(graph), [graph]);
  state.current.selected = selected;

  useEffect(() => {
    const container = box.current;
    if (!container) return;
    let g: Graph;
    let sigma: Sigma;
    const dark = darkScheme();
    try {
      g = toGraphology(graph);
      sigma = new Sigma(g, container, {
        renderEdgeLabels: false,
        zIndex: true,
        labelRenderedSizeThreshold: 8,
        stagePadding: 48,
        // software WebGL (no GPU) draws a big graph's edges slowly: hide them while the camera moves
        hideEdgesOnMove: g.size > HIDE_EDGES_ABOVE,
        // in the dark scheme: light labels, darker edges; a hovered label keeps its light box, dark text
        labelColor: { color: dark ? "#e6edf3" : "#000" },
        defaultEdgeColor: dark ? "#4a535e" : "#ccc",
        defaultDrawNodeHover: (context, data, settings) =>
          drawDiscNodeHover(context, data, { ...settings, labelColor: { color: "#000" } }),
        nodeReducer: (node, data) => {
          const s = state.current;
          const style = nodeStyle(data as never, s.traced, s.colours.get(node) ?? "#999");
          const color = style.dimmed && dark ? DIMMED_NODE_DARK : style.color;
          const out: Record<string, unknown> = { ...data, color, zIndex: style.dimmed ? 0 : 1 };
          if (style.dimmed) out["label"] = "";
          if (node === s.selected || node === s.hovered) {
            out["highlighted"] = true;
            out["zIndex"] = 2;
          }
          return out;
        },
        edgeReducer: (_edge, data) => {
          const style = edgeStyle(data as never, state.current.traced);
          const out: Record<string, unknown> = { ...data, zIndex: style.dimmed ? 0 : 1 };
          if (style.color) out["color"] = style.dimmed && dark ? DIMMED_EDGE_DARK : style.color;
          if (style.size) out["size"] = style.size;
          return out;
        },
      });
    } catch (exc) {
      setFailed(exc instanceof Error ? exc.message : String(exc));
      return;
    }
    setFailed(null);
    renderer.current = sigma;
    (container as unknown as { sigma?: Sigma }).sigma = sigma; // for the benchmark and tests
    sigma.on("clickNode", ({ node }) => select.current(node));
    sigma.on("enterNode", ({ node }) => {
      state.current.hovered = node;
      hover.current?.(node);
      sigma.refresh({ skipIndexation: true });
    });
    sigma.on("leaveNode", () => {
      state.current.hovered = null;
      hover.current?.(null);
      sigma.refresh({ skipIndexation: true });
    });
    let stopLayout = () => {};
    let killed = false;
    sigma.once("afterRender", () => {
      container.setAttribute("data-drawn-at", String(Math.round(performance.now())));
      container.setAttribute("data-drawn", String(g.order));
      // the layout's time starts once the graph is on screen
      if (!killed) {
        stopLayout = layout(g, layoutTime(g.order, layoutMs), () => container.setAttribute("data-layout", "done"));
      }
    });
    return () => {
      killed = true;
      stopLayout();
      sigma.kill();
      renderer.current = null;
      container.removeAttribute("data-drawn");
      container.removeAttribute("data-drawn-at");
      container.removeAttribute("data-layout");
    };
  }, [graph, layoutMs]);

  useEffect(() => {
    renderer.current?.refresh({ skipIndexation: true });
  }, [colours, selected]);

  return (
    <div class="graph-canvas-wrap">
      <div ref={box} class="graph-canvas" role="img" aria-label={label} data-nodes={graph.nodes.length} />
      {failed ? (
        <p class="problem" role="alert">
          The graph cannot be drawn here ({failed}); the node list below still works.
        </p>
      ) : null}
    </div>
  );
}

/**
 * The colours' meaning: one entry per community (named by `names`, else a short id) or entity
 * type; for a query trace (`traced`), what the outline and the grey mean.
 */
export function Legend({
  entries,
  mode,
  names,
  traced = false,
  dimmed = false,
}: {
  entries: LegendEntry[];
  mode: ColourMode;
  names?: Map<string, string>;
  traced?: boolean;
  dimmed?: boolean;
}) {
  const shown = entries.slice(0, 12);
  return (
    <ul class="graph-legend" aria-label={mode === "community" ? "Colours by community" : "Colours by type"}>
      {traced ? (
        <li class="trace-key">
          outlined: in the answer's context{dimmed ? "; grey: around it" : ""}
        </li>
      ) : null}
      {shown.map((e) => (
        <li>
          <span class="swatch" style={{ background: e.colour }} aria-hidden="true" />
          {legendName(e.value, mode, names)} <span class="muted">({e.count})</span>
        </li>
      ))}
      {entries.length > shown.length ? <li class="muted">and {entries.length - shown.length} more</li> : null}
    </ul>
  );
}

const LIST_LIMIT = 200;

/** The drawn nodes as buttons, filterable: the keyboard's (and the tests') way to pick a node. */
export function NodeList({ graph, selected, onSelect }: { graph: SerializedGraph; selected: string | null; onSelect: (key: string) => void }) {
  const [filter, setFilter] = useState("");
  const wanted = filter.trim().toLowerCase();
  const matching = wanted ? graph.nodes.filter((n) => String(n.attributes.label).toLowerCase().includes(wanted)) : graph.nodes;
  const shown = matching.slice(0, LIST_LIMIT);
  return (
    <div class="node-list">
      <label class="field">
        Filter the {graph.nodes.length} drawn nodes
        <input type="search" value={filter} onInput={(e) => setFilter((e.target as HTMLInputElement).value)} />
      </label>
      <ul aria-label="Drawn nodes">
        {shown.map((n) => (
          <li>
            <button
              type="button"
              class={n.attributes.trace ? "node-button traced" : "node-button"}
              aria-pressed={n.key === selected}
              onClick={() => onSelect(n.key)}
            >
              {n.attributes.label}
              <span class="muted"> {n.attributes.entity_type ?? ""}</span>
            </button>
          </li>
        ))}
      </ul>
      {matching.length > shown.length ? (
        <p class="muted">
          {matching.length - shown.length} more: filter to find them.
        </p>
      ) : null}
    </div>
  );
}
