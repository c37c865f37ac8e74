import { afterEach, describe, expect, it, vi } from "vitest";
import type { RAGOutput } from "../types";
import { queryTrace } from "./client";
import {
  assignColours,
  colourOf,
  communityName,
  cutText,
  DIMMED_EDGE,
  EXCERPT_CHARS,
  expandBlocked,
  indexProblem,
  legendName,
  passagePreview,
  passageText,
  sliceTitle,
  DIMMED_NODE,
  edgeStyle,
  graphParams,
  graphsOf,
  hasTrace,
  layoutTime,
  mergeSlices,
  NO_GROUP_COLOUR,
  nodeSize,
  nodeStyle,
  PALETTE,
  parseGraphParams,
  sourcesNote,
  toGraphML,
  TRACE_EDGE,
  traceRequest,
  truncationNote,
  type SerializedGraph,
} from "./model";

function slice(keys: string[], edges: [string, string][] = [], truncated = false): SerializedGraph {
  return {
    attributes: { label: keys[0], truncated },
    options: { type: "directed", multi: true },
    nodes: keys.map((key, i) => ({ key, attributes: { label: key.toUpperCase(), degree: keys.length - i, depth: i ? 1 : 0 } })),
    edges: edges.map(([s, t]) => ({ key: `${s}-${t}`, source: s, target: t, attributes: { relation: "R" } })),
  };
}

describe("mergeSlices", () => {
  it("adds the new nodes and edges of an expansion, each once", () => {
    const base = slice(["a", "b"], [["a", "b"]]);
    const extra = slice(["b", "c", "a"], [["b", "c"], ["a", "b"]]);
    const out = mergeSlices(base, extra, 10);
    expect(out.nodes.map((n) => n.key)).toEqual(["a", "b", "c"]);
    expect(out.edges.map((e) => e.key)).toEqual(["a-b", "b-c"]);
    expect(out.nodes[1]!.attributes.depth).toBe(1); // base's attributes kept
    expect(out.attributes.truncated).toBe(false);
  });

  it("never holds more than the cap, says it truncated, drops edges to dropped nodes", () => {
    const base = slice(["a", "b"], [["a", "b"]]);
    const extra = slice(["b", "c", "d"], [["b", "c"], ["b", "d"]]);
    const out = mergeSlices(base, extra, 3);
    expect(out.nodes.map((n) => n.key)).toEqual(["a", "b", "c"]);
    expect(out.edges.map((e) => e.key)).toEqual(["a-b", "b-c"]);
    expect(out.attributes.truncated).toBe(true);
    expect(truncationNote(out)).toBe("truncated: showing 3 nodes; more lie within reach");
  });

  it("cuts a base already over the cap and keeps a trace flag from either side", () => {
    const base = slice(["a", "b", "c"], [["b", "c"]]);
    const extra = slice(["a"]);
    extra.nodes[0]!.attributes.trace = true;
    const out = mergeSlices(base, extra, 2);
    expect(out.nodes.map((n) => [n.key, n.attributes.trace ?? false])).toEqual([["a", true], ["b", false]]);
    expect(out.edges).toEqual([]);
    expect(out.attributes.truncated).toBe(true);
  });
});

describe("truncationNote", () => {
  it("names the total when the slice knows it, and is null when nothing was cut", () => {
    const cut = slice(["a", "b"], [], true);
    cut.attributes.total = 5;
    expect(truncationNote(cut)).toBe("truncated: showing 2 of 5 nodes");
    expect(truncationNote(slice(["a"]))).toBeNull();
  });
});

describe("assignColours", () => {
  it("lists the commonest group first, ties by name, grey for none; colours from the group's id", () => {
    const g = slice(["a", "b", "c", "d", "e"]);
    const groups = ["c2", "c1", "c1", null, "c2"];
    g.nodes.forEach((n, i) => (n.attributes.community = groups[i]));
    const { colours, legend } = assignColours(g, "community");
    expect(legend).toEqual([
      { value: "c1", colour: colourOf("c1"), count: 2 },
      { value: "c2", colour: colourOf("c2"), count: 2 },
      { value: "none", colour: NO_GROUP_COLOUR, count: 1 },
    ]);
    expect([...colours.values()]).toEqual([colourOf("c2"), colourOf("c1"), colourOf("c1"), NO_GROUP_COLOUR, colourOf("c2")]);
    expect(PALETTE).toContain(colourOf("c1"));
  });

  it("keeps a community's colour whatever else is drawn (not the order seen)", () => {
    const one = slice(["a", "b", "c"]);
    ["d7f745c8", "x", "x"].forEach((c, i) => (one.nodes[i]!.attributes.community = c));
    const two = slice(["p", "q"]);
    ["y", "d7f745c8"].forEach((c, i) => (two.nodes[i]!.attributes.community = c));
    expect(assignColours(one, "community").colours.get("a")).toBe(assignColours(two, "community").colours.get("q"));
    expect(colourOf("d7f745c8")).toBe(colourOf("d7f745c8"));
    const spread = new Set(Array.from({ length: 60 }, (_, i) => colourOf(`community-${i}`)));
    expect(spread.size).toBeGreaterThan(8); // the hash uses the palette, not one colour
  });

  it("colours by entity type when asked, stably by the type's name", () => {
    const g = slice(Array.from({ length: 13 }, (_, i) => `n${String(i).padStart(2, "0")}`));
    g.nodes.forEach((n, i) => (n.attributes.entity_type = `T${String(i).padStart(2, "0")}`));
    const { colours, legend } = assignColours(g, "type");
    expect(legend).toHaveLength(13);
    expect(colours.get("n12")).toBe(colourOf("T12"));
  });
});

describe("names and titles", () => {
  const hash = "d7f745c8".repeat(8);
  it("names a community by its title, else its top members, never by its whole hash", () => {
    expect(communityName({ id: hash, title: "The Curies" })).toBe("The Curies");
    expect(communityName({ id: hash, title: null, top_members: ["barn owl", "voles", "mill"] })).toBe("barn owl, voles, mill");
    expect(communityName({ id: hash })).toBe("community d7f745c8");
    expect(legendName(hash, "community")).toBe("community d7f745c8");
    expect(legendName(hash, "community", new Map([[hash, "barn owl, voles"]]))).toBe("barn owl, voles");
    expect(legendName("PERSON", "type")).toBe("PERSON");
    expect(legendName("none", "community")).toBe("none");
  });

  it("titles a whole graph, a neighbourhood, a community and a trace", () => {
    const whole = slice(["a", "b"]);
    whole.attributes = { label: "*", index: "docs", total: 9, truncated: true };
    expect(sliceTitle(whole)).toBe("Whole graph of index docs (9 nodes, 2 drawn)");
    whole.attributes.total = 2;
    expect(sliceTitle(whole)).toBe("Whole graph of index docs (2 nodes)");
    expect(sliceTitle(slice(["Warsaw"]))).toBe("Neighbourhood of Warsaw");
    const trace = slice(["a"]);
    trace.attributes = { label: "trace", centre: null, communities: [], notes: [] };
    expect(sliceTitle(trace)).toBe("Query trace");
    const community = slice(["a"]);
    community.attributes = { label: "", community: hash };
    expect(sliceTitle(community)).toBe("Community community d7f745c8");
  });
});

describe("passages", () => {
  it("drops Markdown heading marks from the preview and cuts at a word with an ellipsis", () => {
    expect(passagePreview("# Roald Amundsen\n\nRoald Amundsen led the first expedition to reach the South Pole in 1911.", 40)).toBe(
      "Roald Amundsen Roald Amundsen led the…",
    );
    expect(passagePreview("## Short", 80)).toBe("Short");
  });

  it("ends a passage the server cut with an ellipsis, after a whole word", () => {
    const cut = "word ".repeat(59) + "wor"; // 298 characters
    expect(cut.length + 2).toBeGreaterThanOrEqual(EXCERPT_CHARS);
    const excerpt = (cut + "ds").slice(0, EXCERPT_CHARS);
    expect(passageText(excerpt).endsWith("word…")).toBe(true);
    expect(passageText("A short whole passage.")).toBe("A short whole passage.");
    expect(cutText("a short text", 80)).toBe("a short text");
  });
});

describe("messages", () => {
  it("says when Max nodes stops Expand", () => {
    expect(expandBlocked(slice(["a", "b", "c", "d", "e"]), 5)).toBe("Max nodes (5) reached: raise Max nodes to expand");
    expect(expandBlocked(slice(["a"]), 5)).toBeNull();
  });

  it("says why an index in the address cannot be drawn", () => {
    const catalogs = [
      { index: "plain", methodologies: ["naive"] },
      { index: "docs", methodologies: ["lazy"] },
    ];
    expect(indexProblem("plain", catalogs)).toMatch(/^Index 'plain' has no graph \(build one: /);
    expect(indexProblem("nope", catalogs)).toBe("No index 'nope' on this server: pick another index.");
    expect(indexProblem("docs", catalogs)).toBeNull();
    expect(indexProblem(null, catalogs)).toBeNull();
  });

  it("words a cut slice as the guide does", () => {
    expect(truncationNote(slice(["a", "b"], [], true))).toBe("truncated: showing 2 nodes; more lie within reach");
  });
});

describe("sizes and trace styles", () => {
  it("sizes by the square root of degree between 4 and 16", () => {
    expect(nodeSize(0, 9)).toBe(4);
    expect(nodeSize(9, 9)).toBe(16);
    expect(nodeSize(1, 4)).toBe(10);
    expect(nodeSize(3, 0)).toBe(6);
  });

  it("dims what is not in the trace and highlights what is", () => {
    const g = slice(["a", "b"], [["a", "b"]]);
    expect(hasTrace(g)).toBe(false);
    expect(nodeStyle(g.nodes[1]!.attributes, false, "#123")).toEqual({ color: "#123", dimmed: false });
    g.nodes[0]!.attributes.trace = true;
    g.nodes[0]!.attributes.sources = [1, 3];
    expect(hasTrace(g)).toBe(true);
    expect(nodeStyle(g.nodes[0]!.attributes, true, "#123")).toEqual({ color: "#123", dimmed: false });
    expect(nodeStyle(g.nodes[1]!.attributes, true, "#123")).toEqual({ color: DIMMED_NODE, dimmed: true });
    expect(edgeStyle({ trace: true }, true)).toEqual({ color: TRACE_EDGE, size: 2.5, dimmed: false });
    expect(edgeStyle({}, true)).toEqual({ color: DIMMED_EDGE, dimmed: true });
    expect(edgeStyle({}, false)).toEqual({ dimmed: false });
    expect(sourcesNote(g.nodes[0]!.attributes)).toBe("came through source [1], [3]");
    expect(sourcesNote(g.nodes[1]!.attributes)).toBeNull();
  });
});

describe("hash parameters", () => {
  it("round-trips a view state and leaves defaults out", () => {
    const params = graphParams({ index: "docs", graph: "concepts", label: "barn owl", depth: 2, maxNodes: 50 });
    expect(params).toEqual({ index: "docs", graph: "concepts", label: "barn owl", max_nodes: "50" });
    const back = parseGraphParams(new URLSearchParams(params));
    expect(back).toEqual({ index: "docs", graph: "concepts", label: "barn owl", community: null, depth: 2, maxNodes: 50, trace: false });
  });

  it("clamps numbers to the API's bounds and ignores an unknown graph", () => {
    const p = parseGraphParams(new URLSearchParams("graph=words&depth=9&max_nodes=99999&trace=1"));
    expect([p.graph, p.depth, p.maxNodes, p.trace]).toEqual([null, 5, 2000, true]);
    expect(parseGraphParams(new URLSearchParams("max_nodes=abc&depth=-1")).maxNodes).toBe(200);
    expect(parseGraphParams(new URLSearchParams("depth=-1")).depth).toBe(0);
  });

  it("knows which graphs an index holds", () => {
    expect(graphsOf(["lightrag", "lazy"])).toEqual(["entities", "concepts"]);
    expect(graphsOf(["naive"])).toEqual([]);
  });
});

const OUTPUT = {
  question: "q",
  answer: "a",
  index: "default",
  sources: [
    { n: 1, kind: "entity", id: "e1", text: "Marie", text_unit_ids: ["u1", "u2"] },
    { n: 2, kind: "text_unit", id: "u3", text: "passage" },
  ],
} as unknown as RAGOutput;

describe("query trace", () => {
  afterEach(() => vi.unstubAllGlobals());

  it("asks for the answer's numbered sources with their ids and units", () => {
    expect(traceRequest(OUTPUT, "entities", 5000)).toEqual({
      index: "default",
      graph: "entities",
      sources: [
        { n: 1, kind: "entity", id: "e1", text_unit_ids: ["u1", "u2"] },
        { n: 2, kind: "text_unit", id: "u3", text_unit_ids: [] },
      ],
      max_nodes: 2000,
    });
  });

  it("POSTs the trace and returns the slice", async () => {
    const answer = slice(["e1"]);
    answer.nodes[0]!.attributes.trace = true;
    const fetchMock = vi.fn(async () => new Response(JSON.stringify(answer), { status: 200 }));
    vi.stubGlobal("fetch", fetchMock);
    vi.stubGlobal("sessionStorage", { getItem: () => null });
    const out = await queryTrace(OUTPUT, null, 100);
    expect(out.nodes[0]!.attributes.trace).toBe(true);
    const [path, init] = fetchMock.mock.calls[0] as unknown as [string, RequestInit];
    expect(path).toBe("/v1/graph/trace");
    expect(init.method).toBe("POST");
    expect(JSON.parse(String(init.body))).toMatchObject({ index: "default", graph: null, max_nodes: 100 });
  });
});

describe("toGraphML", () => {
  it("declares each attribute and escapes text", () => {
    const g = slice(["a<b", "c"], [["a<b", "c"]]);
    g.nodes[0]!.attributes.description = 'says "x" & <y>';
    const out = toGraphML(g);
    expect(out).toContain('<key id="node:label" for="node" attr.name="label" attr.type="string"/>');
    expect(out).toContain('<key id="node:degree" for="node" attr.name="degree" attr.type="double"/>');
    expect(out).toContain('<node id="a&lt;b">');
    expect(out).toContain("says &quot;x&quot; &amp; &lt;y&gt;");
    expect(out).toContain('<edge id="a&lt;b-c" source="a&lt;b" target="c">');
    expect(out).not.toContain("<y>");
  });
});

describe("layoutTime", () => {
  it("runs the layout longer for big graphs, within four times the base", () => {
    expect([layoutTime(10, 2500), layoutTime(5000, 2500), layoutTime(50000, 2500)]).toEqual([2500, 5000, 10000]);
  });
});
