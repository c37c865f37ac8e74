/**
 * The graph view's logic without a DOM: the API's graph shapes, merging slices under the node
 * cap, colours and sizes, query-trace highlighting, the view's hash parameters.
 */
import type { RAGOutput, Source } from "../types";

export type GraphKind = "entities" | "concepts";
export type ColourMode = "community" | "type";

/** A community of a query trace's context (`attributes.communities` of a trace slice). */
export interface TraceCommunity {
  id: string;
  level: number;
  title: string | null;
}

/** Graph-level attributes of a slice (`SliceAttributes`, plus a trace's communities). */
export interface SliceAttributes {
  index?: string;
  graph?: GraphKind;
  label?: string;
  centre?: string | null;
  max_depth?: number;
  max_nodes?: number;
  truncated?: boolean;
  community?: string | null;
  total?: number | null;
  communities?: TraceCommunity[];
  /** In a query trace: what could not be drawn, one line each. */
  notes?: string[];
  [name: string]: unknown;
}

/** A node's attributes: `entity_type`, never `type` (sigma reads `type` as a program name). */
export interface NodeAttributes {
  label: string;
  entity_type?: string;
  degree?: number;
  depth?: number;
  community?: string | null;
  community_level?: number | null;
  description?: string;
  trace?: boolean;
  sources?: number[];
  [name: string]: unknown;
}

export interface EdgeAttributes {
  weight?: number;
  relation?: string;
  description?: string;
  trace?: boolean;
  [name: string]: unknown;
}

/** graphology's serialized graph, as `GET /v1/graph/slice` answers it. */
export interface SerializedGraph {
  attributes: SliceAttributes;
  options: { type: "directed" | "undirected" | "mixed"; multi: boolean; allowSelfLoops?: boolean };
  nodes: { key: string; attributes: NodeAttributes }[];
  edges: { key?: string; source: string; target: string; attributes: EdgeAttributes }[];
}

export const DEFAULT_DEPTH = 2;
export const DEFAULT_MAX_NODES = 200;
/** The API's cap on a slice (`service/graph.py` MAX_NODES) and its hops (MAX_DEPTH). */
export const MAX_NODES = 2000;
export const MAX_DEPTH = 5;

const edgeId = (e: SerializedGraph["edges"][number]) =>
  e.key ?? `${e.source}\u0000${e.target}\u0000${e.attributes.relation ?? ""}`;

/**
 * Keep at most `cap` nodes of `graph` (the first ones: slices come best first) and the edges
 * between kept nodes; `attributes.truncated` is set when nodes were dropped.
 */
export function capGraph(graph: SerializedGraph, cap: number): SerializedGraph {
  if (graph.nodes.length <= cap) return graph;
  const nodes = graph.nodes.slice(0, Math.max(0, cap));
  const kept = new Set(nodes.map((n) => n.key));
  return {
    ...graph,
    attributes: { ...graph.attributes, truncated: true },
    nodes,
    edges: graph.edges.filter((e) => kept.has(e.source) && kept.has(e.target)),
  };
}

/**
 * `base` with the nodes and edges of `extra` (an expanded node's slice) added, never more than
 * `cap` nodes: `base`'s nodes first, then `extra`'s new ones in their order. A node in both
 * keeps `base`'s attributes (its depth from the first centre) with `trace` kept if either has
 * it. `attributes.truncated` says either slice was cut or the cap dropped nodes of `extra`.
 */
export function mergeSlices(base: SerializedGraph, extra: SerializedGraph, cap: number): SerializedGraph {
  const capped = capGraph(base, cap);
  const byKey = new Map(capped.nodes.map((n) => [n.key, n]));
  const nodes = [...capped.nodes];
  let dropped = false;
  for (const node of extra.nodes) {
    const held = byKey.get(node.key);
    if (held) {
      if (node.attributes.trace && !held.attributes.trace) {
        const merged = { key: held.key, attributes: { ...held.attributes, trace: true } };
        nodes[nodes.indexOf(held)] = merged;
        byKey.set(node.key, merged);
      }
    } else if (nodes.length < cap) {
      nodes.push(node);
      byKey.set(node.key, node);
    } else dropped = true;
  }
  const seen = new Set<string>();
  const edges = [];
  for (const edge of [...capped.edges, ...extra.edges]) {
    const id = edgeId(edge);
    if (seen.has(id) || !byKey.has(edge.source) || !byKey.has(edge.target)) continue;
    seen.add(id);
    edges.push(edge);
  }
  const truncated = Boolean(capped.attributes.truncated || extra.attributes.truncated || dropped);
  return { ...capped, attributes: { ...capped.attributes, truncated }, nodes, edges };
}

/** The note the view shows for a truncated slice; null when everything within reach is drawn. */
export function truncationNote(graph: SerializedGraph): string | null {
  if (!graph.attributes.truncated) return null;
  const shown = graph.nodes.length;
  const total = graph.attributes.total;
  return typeof total === "number" && total > shown
    ? `truncated: showing ${shown} of ${total} nodes`
    : `truncated: showing ${shown} nodes; more lie within reach`;
}

/** Twelve colours distinguishable on light and dark backgrounds; then the palette repeats. */
export const PALETTE = [
  "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
  "#b07aa1", "#ff9da7", "#9c755f", "#17becf", "#8c6d31", "#6b6ecf",
];
export const NO_GROUP_COLOUR = "#9aa0a6";
export const DIMMED_NODE = "#d9dde1";
export const DIMMED_EDGE = "#eceff1";
export const TRACE_EDGE = "#d62728";
/** Dimmed nodes and edges on the dark scheme's canvas. */
export const DIMMED_NODE_DARK = "#3a414a";
export const DIMMED_EDGE_DARK = "#262c33";

export interface LegendEntry {
  value: string;
  colour: string;
  count: number;
}

/** The group a node is coloured by: its community id, or its entity type. */
export function groupOf(attributes: NodeAttributes, mode: ColourMode): string | null {
  const value = mode === "community" ? attributes.community : attributes.entity_type;
  return value === undefined || value === null || value === "" ? null : String(value);
}

/** A group's colour: its name hashed into the palette, so a community or a type keeps its
 * colour from one drawing to the next whatever else is drawn. */
export function colourOf(group: string): string {
  let h = 2166136261;
  for (let i = 0; i < group.length; i++) h = Math.imul(h ^ group.charCodeAt(i), 16777619);
  return PALETTE[(h >>> 0) % PALETTE.length]!;
}

/**
 * A colour per group of the drawn nodes (`colourOf` its id or type; nodes without a group are
 * grey) and the legend, the most common group first (ties by name).
 */
export function assignColours(
  graph: SerializedGraph,
  mode: ColourMode,
): { colours: Map<string, string>; legend: LegendEntry[] } {
  const counts = new Map<string, number>();
  let none = 0;
  for (const node of graph.nodes) {
    const group = groupOf(node.attributes, mode);
    if (group === null) none += 1;
    else counts.set(group, (counts.get(group) ?? 0) + 1);
  }
  const order = [...counts.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const colours = new Map<string, string>();
  for (const node of graph.nodes) {
    const group = groupOf(node.attributes, mode);
    colours.set(node.key, group === null ? NO_GROUP_COLOUR : colourOf(group));
  }
  const legend = order.map(([value, count]) => ({ value, colour: colourOf(value), count }));
  if (none) legend.push({ value: "none", colour: NO_GROUP_COLOUR, count: none });
  return { colours, legend };
}

/** A community's display name: its report's title, else its best connected members, else a
 * short form of its id (a 64-character hash is never shown whole). */
export function communityName(c: { id: string; title?: string | null; top_members?: string[] | null }): string {
  if (c.title) return c.title;
  if (c.top_members?.length) return c.top_members.join(", ");
  return `community ${c.id.slice(0, 8)}`;
}

/** A legend entry's name: a community's from `names`, else its short id; a type as it is. */
export function legendName(value: string, mode: ColourMode, names?: Map<string, string>): string {
  const named = names?.get(value);
  if (named) return named;
  return mode === "community" && value !== "none" ? communityName({ id: value }) : value;
}

/** The heading of a drawn slice: a query trace, the whole graph, a community or a neighbourhood. */
export function sliceTitle(graph: SerializedGraph, names?: Map<string, string>): string {
  const a = graph.attributes;
  const n = graph.nodes.length;
  if (a.communities !== undefined || a.notes !== undefined || (a.label === "trace" && !a.centre)) return "Query trace";
  if (a.label === "*") {
    const total = typeof a.total === "number" ? a.total : n;
    return `Whole graph${a.index ? ` of index ${a.index}` : ""} (${total} nodes${total > n ? `, ${n} drawn` : ""})`;
  }
  if (a.community) return `Community ${legendName(a.community, "community", names)}`;
  if (a.label) return `Neighbourhood of ${a.label}`;
  return `Graph${a.index ? ` of index ${a.index}` : ""}`;
}

/** The first characters of a passage for its one-line summary: leading Markdown heading marks
 * dropped, whitespace folded, cut at a word with "…". */
export function passagePreview(text: string, chars = 80): string {
  const plain = text.replace(/^\s*#{1,6}\s+/, "").replace(/\n\s*#{1,6}\s+/g, " ").replace(/\s+/g, " ").trim();
  return cutText(plain, chars);
}

/** `text` at most `chars` long, cut after a whole word and ended with "…" when it was cut (or
 * when `cut` says it is already a cut excerpt, like the API's 300-character passages). */
export function cutText(text: string, chars: number, cut = false): string {
  if (text.length <= chars && !cut) return text;
  if (text.length > chars) {
    const head = text.slice(0, chars);
    const space = head.search(/\s\S*$/);
    text = space > chars / 2 ? head.slice(0, space) : head;
  } else {
    // an excerpt cut by the server: drop its last, possibly partial word
    const space = text.search(/\s\S*$/);
    if (space > text.length / 2) text = text.slice(0, space);
  }
  return text.replace(/[\s,;:.-]+$/, "") + "…";
}

/** The server's passage excerpts are the first `EXCERPT_CHARS` characters of the text. */
export const EXCERPT_CHARS = 300;

/** A passage's text as opened: whole, or ended with "…" where the server cut it. */
export function passageText(excerpt: string): string {
  return excerpt.length >= EXCERPT_CHARS ? cutText(excerpt, EXCERPT_CHARS, true) : excerpt;
}

/** Why Expand adds nothing: the drawing already holds Max nodes; null when it can grow. */
export function expandBlocked(graph: SerializedGraph, cap: number): string | null {
  return graph.nodes.length >= cap ? `Max nodes (${cap}) reached: raise Max nodes to expand` : null;
}

/** Why an index named in the address cannot be drawn; null when it holds a graph (or none is named). */
export function indexProblem(index: string | null, catalogs: { index: string; methodologies: string[] }[]): string | null {
  if (!index) return null;
  const found = catalogs.find((c) => c.index === index);
  if (!found) return `No index '${index}' on this server: pick another index.`;
  if (!graphsOf(found.methodologies).length) {
    return `Index '${index}' has no graph (build one: index it with the lazy methodology for concepts, or graphrag, lightrag or hipporag for entities): pick another index.`;
  }
  return null;
}

/** A node's drawn radius in pixels: 4 to 16, by the square root of its degree among the drawn. */
export function nodeSize(degree: number, maxDegree: number): number {
  if (maxDegree <= 0) return 6;
  return 4 + 12 * Math.sqrt(Math.max(0, degree) / maxDegree);
}

/** How long the layout runs for a graph: `base` ms, up to 4 times that for big graphs. */
export function layoutTime(order: number, base: number): number {
  return Math.round(Math.min(4 * base, Math.max(base, order)));
}

/** Whether the graph is a query trace (some node or edge has `trace: true`). */
export function hasTrace(graph: SerializedGraph): boolean {
  return graph.nodes.some((n) => n.attributes.trace === true) || graph.edges.some((e) => e.attributes.trace === true);
}

/** How a node is drawn in a trace: highlighted when it was in the context, else dimmed. */
export function nodeStyle(attributes: NodeAttributes, traced: boolean, colour: string): { color: string; dimmed: boolean } {
  if (traced && attributes.trace !== true) return { color: DIMMED_NODE, dimmed: true };
  return { color: colour, dimmed: false };
}

/** How an edge is drawn in a trace: red and thicker when in the context, else faint. */
export function edgeStyle(attributes: EdgeAttributes, traced: boolean): { color?: string; size?: number; dimmed: boolean } {
  if (!traced) return { dimmed: false };
  return attributes.trace === true ? { color: TRACE_EDGE, size: 2.5, dimmed: false } : { color: DIMMED_EDGE, dimmed: true };
}

/** "came through source [1], [3]" for a traced node; null when it has no sources. */
export function sourcesNote(attributes: NodeAttributes): string | null {
  const sources = Array.isArray(attributes.sources) ? attributes.sources : [];
  if (!sources.length) return null;
  return `came through source ${sources.map((n) => `[${n}]`).join(", ")}`;
}

/** A source as the API sends it: with the item id and the text units it rests on. */
export interface TracedSource extends Source {
  id?: string;
  text_unit_ids?: string[];
}

export interface TraceRequest {
  index: string;
  graph: GraphKind | null;
  sources: { n: number; kind: string; id: string; text_unit_ids: string[] }[];
  max_nodes: number;
}

/** The body of `POST /v1/graph/trace` for an answer. */
export function traceRequest(output: RAGOutput, graph: GraphKind | null, maxNodes: number): TraceRequest {
  const sources = (output.sources as TracedSource[]).map((s) => ({
    n: s.n,
    kind: s.kind,
    id: s.id ?? "",
    text_unit_ids: Array.isArray(s.text_unit_ids) ? s.text_unit_ids : [],
  }));
  return { index: output.index, graph, sources, max_nodes: clamp(maxNodes, 1, MAX_NODES, DEFAULT_MAX_NODES) };
}

/** What the hash of the Graph view holds (`#graph?index=…&graph=…&label=…`). */
export interface GraphParams {
  index: string | null;
  graph: GraphKind | null;
  label: string | null;
  community: string | null;
  depth: number;
  maxNodes: number;
  trace: boolean;
}

function clamp(value: number, low: number, high: number, fallback: number): number {
  if (!Number.isFinite(value)) return fallback;
  return Math.min(high, Math.max(low, Math.trunc(value)));
}

/** The view's parameters from the hash; bad numbers fall back or are clamped to the API's bounds. */
export function parseGraphParams(params: URLSearchParams): GraphParams {
  const graph = params.get("graph");
  const num = (name: string) => (params.has(name) ? Number(params.get(name)) : NaN);
  return {
    index: params.get("index") || null,
    graph: graph === "entities" || graph === "concepts" ? graph : null,
    label: params.get("label") || null,
    community: params.get("community") || null,
    depth: clamp(num("depth"), 0, MAX_DEPTH, DEFAULT_DEPTH),
    maxNodes: clamp(num("max_nodes"), 1, MAX_NODES, DEFAULT_MAX_NODES),
    trace: params.get("trace") === "1",
  };
}

/** The hash parameters of a view state (defaults and empty values left out). */
export function graphParams(state: Partial<GraphParams>): Record<string, string> {
  const out: Record<string, string> = {};
  if (state.index) out["index"] = state.index;
  if (state.graph) out["graph"] = state.graph;
  if (state.label) out["label"] = state.label;
  if (state.community) out["community"] = state.community;
  if (state.depth !== undefined && state.depth !== DEFAULT_DEPTH) out["depth"] = String(state.depth);
  if (state.maxNodes !== undefined && state.maxNodes !== DEFAULT_MAX_NODES) out["max_nodes"] = String(state.maxNodes);
  if (state.trace) out["trace"] = "1";
  return out;
}

/** The graphs an index holds, from its methodologies (`GET /v1/indexes`). */
export function graphsOf(methodologies: string[]): GraphKind[] {
  const out: GraphKind[] = [];
  if (methodologies.some((m) => m === "graphrag" || m === "lightrag" || m === "hipporag")) out.push("entities");
  if (methodologies.includes("lazy")) out.push("concepts");
  return out;
}

const xml = (text: unknown) =>
  String(text).replace(/[<>&"']/g, (c) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;", "'": "&apos;" })[c]!);

/** The graph as GraphML: every scalar node and edge attribute a `<data>` of a declared key. */
export function toGraphML(graph: SerializedGraph): string {
  const keys = new Map<string, { for: "node" | "edge"; type: string }>();
  const scalar = (v: unknown) => typeof v === "string" || typeof v === "number" || typeof v === "boolean";
  const declare = (where: "node" | "edge", attrs: Record<string, unknown>) => {
    for (const [name, value] of Object.entries(attrs)) {
      if (!scalar(value)) continue;
      const type = typeof value === "number" ? "double" : typeof value === "boolean" ? "boolean" : "string";
      keys.set(`${where}:${name}`, { for: where, type });
    }
  };
  graph.nodes.forEach((n) => declare("node", n.attributes));
  graph.edges.forEach((e) => declare("edge", e.attributes));
  const data = (where: string, attrs: Record<string, unknown>) =>
    Object.entries(attrs)
      .filter(([, v]) => scalar(v))
      .map(([name, v]) => `<data key="${xml(`${where}:${name}`)}">${xml(v)}</data>`)
      .join("");
  const lines = ['<?xml version="1.0" encoding="UTF-8"?>', '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">'];
  for (const [id, k] of keys) {
    lines.push(`<key id="${xml(id)}" for="${k.for}" attr.name="${xml(id.slice(k.for.length + 1))}" attr.type="${k.type}"/>`);
  }
  lines.push(`<graph edgedefault="${graph.options.type === "undirected" ? "undirected" : "directed"}">`);
  for (const n of graph.nodes) lines.push(`<node id="${xml(n.key)}">${data("node", n.attributes)}</node>`);
  graph.edges.forEach((e, i) =>
    lines.push(`<edge id="${xml(e.key ?? `e${i}`)}" source="${xml(e.source)}" target="${xml(e.target)}">${data("edge", e.attributes)}</edge>`),
  );
  lines.push("</graph>", "</graphml>");
  return lines.join("\n") + "\n";
}
