import { afterEach, describe, expect, it, vi } from "vitest";
import type { RAGOutput } from "../types";
import { queryTrace } from "./client";
import {
  assignColours,
  DIMMED_EDGE,
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
    expect(truncationNote(out)).toBe("truncated: showing 3 nodes; more lie within reach (raise max nodes or expand a node)");
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
  it("gives the commonest group the first colour, ties by name, grey for none", () => {
    const g = slice(["a", "b", "c", "d", "e"]);
    const groups = ["c2", "c1", "c1", null, "c2"];
    g.nodes.forEach((n, i) => (n.attributes.community = groups[i]));
    const { colours, legend } = assignColours(g, "community");
    expect(legend).toEqual([
      { value: "c1", colour: PALETTE[0], count: 2 },
      { value: "c2", colour: PALETTE[1], count: 2 },
      { value: "none", colour: NO_GROUP_COLOUR, count: 1 },
    ]);
    expect([...colours.values()]).toEqual([PALETTE[1], PALETTE[0], PALETTE[0], NO_GROUP_COLOUR, PALETTE[1]]);
  });

  it("colours by entity type when asked, and wraps the palette", () => {
    const g = slice(Array.from({ length: 13 }, (_, i) => `n${String(i).padStart(2, "0")}`));
    g.nodes.forEach((n, i) => (n.attributes.entity_type = `T${String(i).padStart(2, "0")}`));
    const { colours, legend } = assignColours(g, "type");
    expect(legend).toHaveLength(13);
    expect(colours.get("n12")).toBe(PALETTE[0]);
    expect(colours.get("n11")).toBe(PALETTE[11]);
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
