/**
 * The Graph view (loaded on demand by graph.tsx): pick an index and graph, search a label, draw
 * its neighbourhood, expand nodes, read a node, browse communities, draw a query trace.
 * Everything it shows comes from `/v1/graph/…`; its state is in the hash (`#graph?label=…`).
 */
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { ApiError, listIndexes } from "../api";
import { go, takeTrace } from "../nav";
import { isUnauthorized, Problem } from "../problem";
import type { IndexCatalog, RAGOutput } from "../types";
import type { ViewProps } from "../view";
import { GraphCanvas, Legend, NodeList } from "./canvas";
import { communitySlice, labelSlice, queryTrace, searchLabels, type LabelMatch, type Scope } from "./client";
import {
  assignColours,
  communityName,
  expandBlocked,
  graphParams,
  graphsOf,
  hasTrace,
  indexProblem,
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
import { CommunityBrowser, NodePanel, useCommunities } from "./panels";

type Drawn =
  | { state: "idle" }
  | { state: "loading" }
  | { state: "done"; graph: SerializedGraph }
  | { state: "error"; error: unknown }
  | { state: "no-match"; text: string }
  | { state: "no-trace" };

/** The plain message for a search that names nothing in the graph. */
export const noMatch = (text: string) => `No entity or concept matches '${text}' in this graph`;

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
  // the text the suggestions were searched for (so "no match" is said for that text only)
  const [searched, setSearched] = useState<string | null>(null);
  // "showing the best match: X" after Show with text that is not a label
  const [matchNote, setMatchNote] = useState<{ label: string; note: string } | null>(null);
  const [expandNote, setExpandNote] = useState<string | null>(null);
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
  // a trace names its own index; otherwise an index in the address must hold a graph
  const badIndex = catalogs && !params.trace ? indexProblem(params.index, catalogs) : null;
  const catalog = badIndex ? null : (withGraph.find((c) => c.index === params.index) ?? withGraph[0] ?? null);
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
    if ((!catalogs || badIndex) && !params.trace) {
      setDrawn({ state: "idle" });
      return;
    }
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
        // a label the graph lacks (an old link, a typed address): a plain message, not the raw 404
        if (error instanceof ApiError && error.status === 404 && params.label && !params.trace && !params.community) {
          setDrawn({ state: "no-match", text: params.label });
          return;
        }
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
      setSearched(null);
      return;
    }
    const abort = new AbortController();
    const timer = setTimeout(() => {
      searchLabels(scope, query.trim(), abort.signal).then(
        (found) => {
          setSuggestions(found.matches);
          setSearched(query.trim());
        },
        () => {
          setSuggestions([]);
          setSearched(null);
        },
      );
    }, 150);
    return () => {
      clearTimeout(timer);
      abort.abort();
    };
  }, [query, scope.index, scope.graph]);

  /** Show: an exact label is drawn; other text draws the best match of the label search. */
  const search = async (e: Event) => {
    e.preventDefault();
    const text = query.trim();
    if (!text) return;
    setMatchNote(null);
    let found: LabelMatch[];
    try {
      found = (await searchLabels(scope, text)).matches;
    } catch (error) {
      setDrawn({ state: "error", error });
      fail(error);
      return;
    }
    const exact = found.find((m) => m.match === "exact" || m.label === text);
    const best = exact ?? found[0];
    if (!best) {
      setSuggestions([]);
      setSearched(text);
      setDrawn({ state: "no-match", text }); // nothing is put in the address
      return;
    }
    if (!exact) setMatchNote({ label: best.label, note: `No label '${text}': showing the best match: ${best.label}` });
    show({ label: best.label, community: null });
  };

  const typed = (value: string) => {
    setQuery(value);
    setMatchNote(null);
    setExpandNote(null);
    setExpandError(null);
    if (drawn.state === "error" || drawn.state === "no-match") setDrawn({ state: "idle" });
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
    if (tree?.state === "ready") for (const lv of tree.value.levels) for (const c of lv.communities) names.set(c.id, communityName(c));
    for (const c of graph?.attributes.communities ?? []) if (c.title || !names.has(c.id)) names.set(c.id, communityName(c));
    return names;
  }, [graph, tree]);
  const selectedAttrs = graph?.nodes.find((n) => n.key === selected)?.attributes ?? null;
  const expand = async (key: string) => {
    if (drawn.state !== "done") return;
    setExpandError(null);
    const blocked = expandBlocked(drawn.graph, maxNodes);
    setExpandNote(blocked);
    if (blocked) return;
    try {
      const extra = await labelSlice(drawnScope, key, 1, maxNodes);
      setDrawn({ state: "done", graph: mergeSlices(drawn.graph, extra, maxNodes) });
    } catch (error) {
      setExpandError(error);
      fail(error);
    }
  };

  useEffect(() => setExpandNote(null), [selected, maxNodes]);

  const note = graph ? truncationNote(graph) : null;
  const listId = "graph-suggestions";

  return (
    <div class="graph-view">
      <form class="graph-controls" onSubmit={search} aria-label="Search the graph">
        {catalogError ? <Problem error={catalogError} context="Indexes" /> : null}
        {badIndex ? (
          <p class="problem" role="alert">
            {badIndex}
          </p>
        ) : null}
        {catalogs && !withGraph.length ? (
          <p class="problem">No index holds a graph: index with the lazy methodology (concepts) or graphrag/lightrag/hipporag (entities).</p>
        ) : null}
        {withGraph.length > 1 || (badIndex && withGraph.length) ? (
          <label class="field">
            Index
            <select
              value={badIndex ? "" : (scope.index ?? "")}
              onChange={(e) => go("graph", graphParams({ index: (e.target as HTMLSelectElement).value }))}
            >
              {badIndex ? <option value="">pick an index</option> : null}
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
            onInput={(e) => typed((e.target as HTMLInputElement).value)}
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
      ) : searched !== null && searched === query.trim() && query !== params.label ? (
        <p class="suggestions muted" role="status" aria-label="Matching labels">
          no match
        </p>
      ) : null}
      {matchNote && matchNote.label === params.label ? (
        <p class="match-note" role="status">
          {matchNote.note}
        </p>
      ) : null}

      {params.trace && trace.current && drawn.state !== "no-trace" ? (
        <div class="trace-heading">
          <h2>Query trace: {trace.current.question}</h2>
          <span class="muted">{trace.current.strategy} on {trace.current.index}</span>
          <a href="#ask">Back to Ask</a>
        </div>
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
      {drawn.state === "no-match" ? (
        <p class="problem" role="alert">
          {noMatch(drawn.text)}
        </p>
      ) : null}
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
            <Legend
              entries={legend}
              mode={colourMode}
              names={communityNames}
              traced={hasTrace(graph)}
              dimmed={hasTrace(graph) && graph.nodes.some((n) => n.attributes.trace !== true)}
            />
            {graph.attributes.communities?.length ? (
              <div class="trace-communities">
                <h3>Communities in the answer's context</h3>
                <ul>
                  {graph.attributes.communities.map((c) => (
                    <li>
                      Level {c.level}: {communityNames.get(c.id) ?? communityName(c)}
                    </li>
                  ))}
                </ul>
              </div>
            ) : null}
            <NodeList graph={graph} selected={selected} onSelect={setSelected} />
          </div>
          <aside class="graph-side">
            {selected ? (
              <NodePanel
                scope={drawnScope}
                nodeKey={selected}
                drawn={selectedAttrs}
                onExpand={expand}
                onUnauthorized={onUnauthorized}
                expandNote={expandNote}
              />
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
