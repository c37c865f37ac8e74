/**
 * The Graph view (loaded on demand by graph.tsx): pick an index and graph, search a label, draw
 * its neighbourhood, expand nodes, read a node, browse communities, draw a query trace.
 * Everything it shows comes from `/v1/graph/…`; its state is in the hash (`#graph?label=…`).
 */
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { listIndexes } from "../api";
import { go, takeTrace } from "../nav";
import { isUnauthorized, Problem } from "../problem";
import type { IndexCatalog, RAGOutput } from "../types";
import type { ViewProps } from "../view";
import { GraphCanvas, Legend, NodeList } from "./canvas";
import { communitySlice, labelSlice, queryTrace, searchLabels, type LabelMatch, type Scope } from "./client";
import {
  assignColours,
  graphParams,
  graphsOf,
  MAX_DEPTH,
  MAX_NODES,
  mergeSlices,
  parseGraphParams,
  toGraphML,
  truncationNote,
  type ColourMode,
  type GraphKind,
  type SerializedGraph,
} from "./model";
import { CommunityBrowser, communityName, NodePanel, useCommunities } from "./panels";

type Drawn =
  | { state: "idle" }
  | { state: "loading" }
  | { state: "done"; graph: SerializedGraph }
  | { state: "error"; error: unknown }
  | { state: "no-trace" };

function download(name: string, type: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export default function Explorer({ keyVersion, onUnauthorized, route }: ViewProps) {
  const params = useMemo(() => parseGraphParams(route.params), [route.params.toString()]);
  const [catalogs, setCatalogs] = useState<IndexCatalog[] | null>(null);
  const [catalogError, setCatalogError] = useState<unknown>(null);
  const [query, setQuery] = useState(params.label ?? "");
  const [suggestions, setSuggestions] = useState<LabelMatch[]>([]);
  const [depth, setDepth] = useState(params.depth);
  const [maxNodes, setMaxNodes] = useState(params.maxNodes);
  const [drawn, setDrawn] = useState<Drawn>({ state: "idle" });
  const [colourMode, setColourMode] = useState<ColourMode>("community");
  const [selected, setSelected] = useState<string | null>(null);
  const [hovered, setHovered] = useState<string | null>(null);
  const [expandError, setExpandError] = useState<unknown>(null);
  const trace = useRef<RAGOutput | null>(null);

  const fail = (error: unknown) => {
    if (isUnauthorized(error)) onUnauthorized();
  };

  useEffect(() => {
    listIndexes().then(setCatalogs, (error) => {
      setCatalogError(error);
      fail(error);
    });
  }, [keyVersion]);

  const withGraph = (catalogs ?? []).filter((c) => graphsOf(c.methodologies).length);
  const catalog = withGraph.find((c) => c.index === params.index) ?? withGraph[0] ?? null;
  const kinds: GraphKind[] = catalog ? graphsOf(catalog.methodologies) : [];
  const kind = params.graph && kinds.includes(params.graph) ? params.graph : (kinds[0] ?? null);
  const scope: Scope = { index: catalog?.index ?? params.index, graph: kind };

  const show = (changes: Partial<typeof params>) =>
    go("graph", graphParams({ ...params, index: scope.index, graph: scope.graph, depth, maxNodes, trace: false, ...changes }));

  // what the hash names is drawn: a query trace, a community, or a label's neighbourhood
  useEffect(() => {
    setQuery(params.label ?? "");
    setDepth(params.depth);
    setMaxNodes(params.maxNodes);
  }, [route.params.toString()]);

  useEffect(() => {
    if (params.trace) {
      trace.current = takeTrace() ?? trace.current;
      if (!trace.current) {
        setDrawn({ state: "no-trace" });
        return;
      }
    } else if (!params.label && !params.community) {
      setDrawn({ state: "idle" });
      return;
    }
    if (!catalogs && !params.trace) return;
    const abort = new AbortController();
    setDrawn({ state: "loading" });
    setSelected(null);
    const loading = params.trace
      ? queryTrace(trace.current!, params.graph, params.maxNodes, abort.signal)
      : params.community
        ? communitySlice(scope, params.community, params.maxNodes, abort.signal)
        : labelSlice(scope, params.label!, params.depth, params.maxNodes, abort.signal);
    loading.then(
      (graph) => !abort.signal.aborted && setDrawn({ state: "done", graph }),
      (error) => {
        if (abort.signal.aborted) return;
        setDrawn({ state: "error", error });
        fail(error);
      },
    );
    return () => abort.abort();
    // a trace names its own index and graph: drawn once, not again when the catalogs arrive
  }, [route.params.toString(), params.trace ? null : catalogs, keyVersion]);

  // label suggestions as the user types
  useEffect(() => {
    if (!catalog || !query.trim() || query === params.label) {
      setSuggestions([]);
      return;
    }
    const abort = new AbortController();
    const timer = setTimeout(() => {
      searchLabels(scope, query, abort.signal).then(
        (found) => setSuggestions(found.matches),
        () => setSuggestions([]),
      );
    }, 150);
    return () => {
      clearTimeout(timer);
      abort.abort();
    };
  }, [query, scope.index, scope.graph]);

  const search = (e: Event) => {
    e.preventDefault();
    const label = query.trim();
    if (label) show({ label, community: null });
  };

  const graph = drawn.state === "done" ? drawn.graph : null;
  const legend = useMemo(() => (graph ? assignColours(graph, colourMode).legend : []), [graph, colourMode]);
  // a node is read from the graph it was drawn from (a trace names its index and graph)
  const drawnScope: Scope = graph?.attributes.index
    ? { index: graph.attributes.index, graph: graph.attributes.graph ?? scope.graph }
    : scope;
  // a trace's communities are those of its index and graph
  const browseScope = params.trace ? drawnScope : scope;
  const tree = useCommunities(browseScope, keyVersion, Boolean(catalog && kind));
  const communityNames = useMemo(() => {
    const names = new Map<string, string>();
    if (tree?.state === "done") for (const lv of tree.value.levels) for (const c of lv.communities) names.set(c.id, communityName(c));
    for (const c of graph?.attributes.communities ?? []) names.set(c.id, communityName(c));
    return names;
  }, [graph, tree]);
  const selectedAttrs = graph?.nodes.find((n) => n.key === selected)?.attributes ?? null;
  const expand = async (key: string) => {
    if (drawn.state !== "done") return;
    setExpandError(null);
    try {
      const extra = await labelSlice(drawnScope, key, 1, maxNodes);
      setDrawn({ state: "done", graph: mergeSlices(drawn.graph, extra, maxNodes) });
    } catch (error) {
      setExpandError(error);
      fail(error);
    }
  };

  const note = graph ? truncationNote(graph) : null;
  const listId = "graph-suggestions";

  return (
    <div class="graph-view">
      <form class="graph-controls" onSubmit={search} aria-label="Search the graph">
        {catalogError ? <Problem error={catalogError} context="Indexes" /> : null}
        {catalogs && !withGraph.length ? (
          <p class="problem">No index holds a graph: index with the lazy methodology (concepts) or graphrag/lightrag/hipporag (entities).</p>
        ) : null}
        {withGraph.length > 1 ? (
          <label class="field">
            Index
            <select value={scope.index ?? ""} onChange={(e) => go("graph", graphParams({ index: (e.target as HTMLSelectElement).value }))}>
              {withGraph.map((c) => (
                <option value={c.index}>{c.index}</option>
              ))}
            </select>
          </label>
        ) : null}
        {kinds.length > 1 ? (
          <label class="field">
            Graph
            <select
              value={kind ?? ""}
              onChange={(e) => go("graph", graphParams({ index: scope.index, graph: (e.target as HTMLSelectElement).value as GraphKind }))}
            >
              {kinds.map((k) => (
                <option value={k}>{k === "entities" ? "entities (LLM graph)" : "concepts (lazy graph)"}</option>
              ))}
            </select>
          </label>
        ) : null}
        <label class="field grow">
          Entity or concept
          <input
            type="search"
            value={query}
            list={listId}
            autoComplete="off"
            onInput={(e) => setQuery((e.target as HTMLInputElement).value)}
          />
          <datalist id={listId}>
            {suggestions.map((m) => (
              <option value={m.label}>{`${m.entity_type}, ${m.degree} links`}</option>
            ))}
          </datalist>
        </label>
        <label class="field small">
          Max depth
          <input type="number" min={0} max={MAX_DEPTH} value={depth} onInput={(e) => setDepth(Number((e.target as HTMLInputElement).value))} />
        </label>
        <label class="field small">
          Max nodes
          <input type="number" min={1} max={MAX_NODES} value={maxNodes} onInput={(e) => setMaxNodes(Number((e.target as HTMLInputElement).value))} />
        </label>
        <button type="submit" disabled={!catalog}>
          Show
        </button>
      </form>
      {suggestions.length ? (
        <ul class="suggestions" aria-label="Matching labels">
          {suggestions.map((m) => (
            <li>
              <button type="button" class="link" onClick={() => show({ label: m.label, community: null })}>
                {m.label}
              </button>{" "}
              <span class="muted">
                {m.entity_type}, {m.degree} links
              </span>
            </li>
          ))}
        </ul>
      ) : null}

      {drawn.state === "no-trace" ? (
        <p class="problem" role="status">
          No query trace to draw: a trace is handed over by "Show in graph" on an answer and is lost when the page
          reloads. Ask again, or search the graph above.
        </p>
      ) : null}
      {drawn.state === "idle" ? <p class="muted">Search an entity or concept to draw its neighbourhood.</p> : null}
      {drawn.state === "loading" ? <p class="muted">Loading the graph…</p> : null}
      {drawn.state === "error" ? <Problem error={drawn.error} context="Graph" /> : null}
      {expandError ? <Problem error={expandError} context="Expand" /> : null}

      {graph?.attributes.notes?.length ? (
        <div class="trace-notes" role="status">
          <p>
            {graph.nodes.length
              ? "Part of the answer's context is not in this graph:"
              : "Nothing of the answer's context is in this graph:"}
          </p>
          <ul>
            {graph.attributes.notes.map((note) => (
              <li>{note}</li>
            ))}
          </ul>
        </div>
      ) : null}
      {graph ? (
        <div class="graph-layout">
          <div class="graph-main">
            <div class="graph-toolbar">
              <fieldset class="colour-mode">
                <legend>Colour by</legend>
                <label>
                  <input type="radio" name="colour" checked={colourMode === "community"} onChange={() => setColourMode("community")} /> community
                </label>
                <label>
                  <input type="radio" name="colour" checked={colourMode === "type"} onChange={() => setColourMode("type")} /> type
                </label>
              </fieldset>
              <span class="downloads">
                Download:{" "}
                <button type="button" class="link" onClick={() => download("graph.json", "application/json", JSON.stringify(graph))}>
                  JSON
                </button>
                <button type="button" class="link" onClick={() => download("graph.graphml", "application/xml", toGraphML(graph))}>
                  GraphML
                </button>
              </span>
            </div>
            <p class="graph-count" role="status">
              {graph.nodes.length} nodes, {graph.edges.length} edges drawn
              {hovered ? ` · ${graph.nodes.find((n) => n.key === hovered)?.attributes.label ?? ""}` : ""}
              {note ? (
                <>
                  {" · "}
                  <strong class="truncated-note">{note}</strong>
                </>
              ) : null}
            </p>
            <GraphCanvas
              graph={graph}
              colourMode={colourMode}
              selected={selected}
              onSelect={setSelected}
              onHover={setHovered}
              label={`Graph of ${graph.nodes.length} nodes around ${graph.attributes.label || "the community"}`}
            />
            <Legend entries={legend} mode={colourMode} names={communityNames} />
            {graph.attributes.communities?.length ? (
              <div class="trace-communities">
                <h3>Communities in the answer's context</h3>
                <ul>
                  {graph.attributes.communities.map((c) => (
                    <li>
                      Level {c.level}: {communityName(c)}
                    </li>
                  ))}
                </ul>
              </div>
            ) : null}
            <NodeList graph={graph} selected={selected} onSelect={setSelected} />
          </div>
          <aside class="graph-side">
            {selected ? (
              <NodePanel scope={drawnScope} nodeKey={selected} drawn={selectedAttrs} onExpand={expand} onUnauthorized={onUnauthorized} />
            ) : (
              <p class="muted">Select a node (in the graph or the list) to read it.</p>
            )}
          </aside>
        </div>
      ) : null}
      {catalog && kind ? (
        <CommunityBrowser
          scope={browseScope}
          tree={tree}
          onFocus={(id) => show({ community: id, label: null })}
          onUnauthorized={onUnauthorized}
        />
      ) : null}
    </div>
  );
}
