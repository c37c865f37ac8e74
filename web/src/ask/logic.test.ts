import { describe, expect, it } from "vitest";
import type { DocumentText, MessageRef, RAGOutput } from "../types";
import {
  answerStates,
  buildHistory,
  canOpen,
  formatTime,
  groupEvidence,
  hasGraph,
  messageBody,
  NO_OPTIONS,
  parseOptions,
  passageParts,
  passageQuery,
  rewrittenQuestion,
  type Turn,
} from "./logic";

function output(over: Partial<RAGOutput> = {}): RAGOutput {
  return {
    question: "What do owls hunt?",
    answer: "Voles [1].",
    answer_kind: "extractive",
    strategy: "naive",
    index: "default",
    sources: [],
    cited: [1],
    usage: { calls: 0, cache_hits: 0, input_tokens: 0, output_tokens: 0, embedded_texts: 1, latency_s: 0 },
    timings_ms: { total: 12 },
    metadata: {},
    ...over,
  };
}

describe("buildHistory", () => {
  it("sends the finished turns, oldest first, with the answers shown", () => {
    const turns: Turn[] = [
      { id: "t1", question: "What do owls hunt?", run: { state: "done", output: output() } },
      { id: "t2", question: "Broken?", run: { state: "failed", error: new Error("x"), text: "half" } },
      { id: "t3", question: "Where?", run: { state: "done", output: output({ answer: "Barns [2]." }) } },
      { id: "t4", question: "Now?", run: { state: "streaming", text: "" } },
    ];
    expect(buildHistory(turns)).toEqual([
      { question: "What do owls hunt?", answer: "Voles [1]." },
      { question: "Where?", answer: "Barns [2]." },
    ]);
  });

  it("is empty for a first question and keeps the last 20 turns", () => {
    expect(buildHistory([])).toEqual([]);
    const many: Turn[] = Array.from({ length: 25 }, (_, i) => ({
      id: `t${i}`,
      question: `q${i}`,
      run: { state: "done", output: output({ answer: `a${i}` }) },
    }));
    const history = buildHistory(many);
    expect(history).toHaveLength(20);
    expect(history[0]).toEqual({ question: "q5", answer: "a5" });
  });
});

describe("rewrittenQuestion", () => {
  it("is the standalone question when the follow-up was rewritten", () => {
    const out = output({ question: "And where?", metadata: { standalone_question: "Where do owls nest?" } });
    expect(rewrittenQuestion(out)).toBe("Where do owls nest?");
  });
  it("is null when retrieval used the question as asked", () => {
    expect(rewrittenQuestion(output({ metadata: { standalone_question: " What do owls hunt? " } }))).toBeNull();
    expect(rewrittenQuestion(output())).toBeNull();
  });
});

describe("answerStates", () => {
  const kinds = (out: RAGOutput) => answerStates(out).map((s) => s.kind);

  it("says nothing for a plain answer", () => {
    expect(answerStates(output({ metadata: { answer_complete: true, finish_reason: "stop" } }))).toEqual([]);
  });
  it("flags cannot answer from answer_kind, metadata.cannot_answer or abstained", () => {
    expect(kinds(output({ answer_kind: "cannot_answer" }))).toEqual(["cannot_answer"]);
    const reason = answerStates(output({ metadata: { cannot_answer: "no report passed" } }));
    expect(reason[0]!.text).toBe("Cannot answer from the sources: no report passed");
    const abstained = answerStates(output({ answer_kind: "generative", metadata: { abstained: true } }));
    expect(abstained.map((s) => s.kind)).toEqual(["cannot_answer"]);
    expect(abstained[0]!.text).toContain("model said");
  });
  it("flags a cut answer from answer_complete or finish_reason length", () => {
    expect(kinds(output({ metadata: { answer_complete: false, finish_reason: "length" } }))).toEqual(["cut"]);
    expect(kinds(output({ metadata: { finish_reason: "length" } }))).toEqual(["cut"]);
    expect(answerStates(output({ metadata: { answer_complete: false } }))[0]!.text).toBe(
      "The answer was cut: it may stop mid-way.",
    );
  });
  it("names each degraded section and its error", () => {
    const states = answerStates(output({ metadata: { degraded: { entities: "TimeoutError: slow", reports: "x" } } }));
    expect(states.map((s) => s.kind)).toEqual(["degraded"]);
    expect(states[0]!.text).toContain("entities (TimeoutError: slow); reports (x)");
    expect(kinds(output({ metadata: { degraded: {} } }))).toEqual([]);
  });
  it("flags the deadline, a weak match and citations of no source, in order", () => {
    const out = output({
      metadata: {
        deadline_hit: true,
        match: { verdict: "weak", coverage: 0.25, similarity: 0.4 },
        invalid_citations: ["7"],
        answer_complete: false,
      },
    });
    expect(kinds(out)).toEqual(["weak", "deadline", "cut", "invalid_citations"]);
    expect(answerStates(out).every((s) => s.tone === "warn")).toBe(true);
  });
});

function ref(guid: string, thread: string, timestamp: string): MessageRef {
  return { guid, thread_id: thread, thread_name: thread.toUpperCase(), sender_name: "Priya", timestamp, text: guid };
}

describe("groupEvidence", () => {
  it("groups the evidence by thread and day, in time order, each message once", () => {
    const out = output({
      evidence: [
        ref("b", "t1", "2018-05-04T15:00:00Z"),
        ref("a", "t1", "2018-05-04T09:00:00Z"),
        ref("c", "t2", "2018-05-03T10:00:00Z"),
        ref("d", "t1", "2018-05-05T10:00:00Z"),
        ref("a", "t1", "2018-05-04T09:00:00Z"),
      ],
    });
    const groups = groupEvidence(out);
    expect(groups.map((g) => [g.thread_id, g.day, g.messages.map((m) => m.guid)])).toEqual([
      ["t2", "2018-05-03", ["c"]],
      ["t1", "2018-05-04", ["a", "b"]],
      ["t1", "2018-05-05", ["d"]],
    ]);
    expect(groups[1]!.thread_name).toBe("T1");
  });
  it("falls back to the messages of the cited sources", () => {
    const out = output({
      cited: [2],
      sources: [
        { n: 1, kind: "text_unit", text: "x", messages: [ref("x", "t1", "2018-01-01T00:00:00Z")] },
        { n: 2, kind: "text_unit", text: "y", messages: [ref("y", "t1", "2018-01-02T00:00:00Z")] },
      ],
    });
    expect(groupEvidence(out).flatMap((g) => g.messages.map((m) => m.guid))).toEqual(["y"]);
    expect(groupEvidence(output())).toEqual([]);
  });
});

describe("formatTime", () => {
  it("shows the minute in UTC", () => {
    expect(formatTime("2018-05-04T14:03:09+00:00")).toBe("2018-05-04 14:03 UTC");
    expect(formatTime("")).toBe("");
    expect(formatTime(undefined)).toBe("");
  });
});

function doc(over: Partial<DocumentText>): DocumentText {
  return {
    document_id: "d",
    path: "owls.md",
    source_scope: "/docs",
    text_units: 3,
    first_unit: 0,
    segments: [],
    passage_start: null,
    passage_end: null,
    more_before: false,
    more_after: false,
    ...over,
  };
}

describe("passageParts", () => {
  const segments = [
    { text_unit_id: "u1", start_char: 0, end_char: 10, text: "Barn owls " },
    { text_unit_id: "u2", start_char: 10, end_char: 20, text: "hunt voles" },
    { text_unit_id: "u3", start_char: 22, end_char: 29, text: "at dusk" },
  ];
  it("marks the passage located by its offsets, across segments", () => {
    const parts = passageParts(doc({ segments, passage_start: 5, passage_end: 15 }));
    expect(parts).toEqual([
      { text: "Barn ", mark: false },
      { text: "owls hunt ", mark: true },
      { text: "voles\nat dusk", mark: false },
    ]);
  });
  it("marks a passage that is whole segments, the gap inside it included", () => {
    const parts = passageParts(doc({ segments, passage_start: 10, passage_end: 29 }));
    expect(parts).toEqual([
      { text: "Barn owls ", mark: false },
      { text: "hunt voles\nat dusk", mark: true },
    ]);
  });
  it("marks nothing without a passage", () => {
    expect(passageParts(doc({ segments }))).toEqual([{ text: "Barn owls hunt voles\nat dusk", mark: false }]);
  });
});

describe("passageQuery and canOpen", () => {
  it("locates a text unit by its offsets", () => {
    const source = { n: 1, kind: "text_unit", text: "hunt voles", document_id: "d", start_char: 10, end_char: 20 };
    expect(passageQuery(source)).toEqual({ start_char: 10, end_char: 20 });
    expect(passageQuery({ ...source, end_char: null })).toEqual({ start_char: 10, end_char: 20 });
    expect(passageQuery({ ...source, start_char: null })).toEqual({});
    expect(canOpen(source)).toBe(true);
    expect(canOpen({ ...source, kind: "entity" })).toBe(false);
    expect(canOpen({ ...source, document_id: null })).toBe(false);
  });
});

describe("hasGraph", () => {
  it("is true for an index with a graph-building methodology", () => {
    expect(hasGraph(["naive"])).toBe(false);
    expect(hasGraph(["naive", "lazy"])).toBe(true);
    expect(hasGraph(["graphrag"])).toBe(true);
    expect(hasGraph([])).toBe(false);
  });
});

describe("parseOptions", () => {
  it("sends only the options set", () => {
    expect(parseOptions(NO_OPTIONS)).toEqual({ ok: true, value: {} });
    expect(
      parseOptions({ top_k: "3", mode: "lexical", max_context_tokens: "800", deadline_s: "2.5", answer_style: "concise" }),
    ).toEqual({
      ok: true,
      value: { top_k: 3, mode: "lexical", max_context_tokens: 800, deadline_s: 2.5, answer_style: "concise" },
    });
  });
  it("names the first option that is not valid", () => {
    expect(parseOptions({ ...NO_OPTIONS, top_k: "0" })).toMatchObject({ ok: false, field: "top_k" });
    expect(parseOptions({ ...NO_OPTIONS, top_k: "2.5" })).toMatchObject({ ok: false, field: "top_k" });
    expect(parseOptions({ ...NO_OPTIONS, max_context_tokens: "10" })).toMatchObject({
      ok: false,
      field: "max_context_tokens",
    });
    expect(parseOptions({ ...NO_OPTIONS, deadline_s: "-1" })).toMatchObject({ ok: false, field: "deadline_s" });
    expect(parseOptions({ ...NO_OPTIONS, deadline_s: "soon" })).toMatchObject({ ok: false, field: "deadline_s" });
  });
});

describe("messageBody", () => {
  it("drops the transcript's time and sender head, keeping continuation lines", () => {
    const m = { guid: "g", thread_id: "t", thread_name: "T", sender_name: "Priya: R" };
    expect(messageBody({ ...m, text: "[2018-05-16 18:05] Priya: R: Cake?\n    (edited)" })).toBe("Cake?\n    (edited)");
    expect(messageBody({ ...m, text: "[undated] Priya: R: hi" })).toBe("hi");
    expect(messageBody({ ...m, text: "[2018-05-16 18:05] Someone else: hi" })).toBe("[2018-05-16 18:05] Someone else: hi");
    expect(messageBody({ ...m, text: "plain" })).toBe("plain");
    expect(messageBody(m)).toBe("");
  });
});
