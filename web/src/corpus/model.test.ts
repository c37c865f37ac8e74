import { describe, expect, it } from "vitest";
import {
  type ArchiveInfo,
  corpusRows,
  type DocumentInfo,
  filterDocuments,
  formatSize,
  groupCorpus,
  type Job,
  jobFailures,
  jobLine,
  jobPercent,
  threadOf,
} from "./model";

function doc(path: string, over: Partial<DocumentInfo> = {}): DocumentInfo {
  return {
    document_id: `id-${path}`,
    path,
    source_scope: "/corpus",
    status: "processed",
    text_units: 1,
    updated_at: 100,
    failures: 0,
    size_bytes: 10,
    ...over,
  };
}

function transcript(path: string, over: Partial<DocumentInfo> = {}): DocumentInfo {
  return doc(path, { source_scope: "messages:", size_bytes: null, ...over });
}

function job(over: Partial<Job> = {}, progress: Partial<Job["progress"]> = {}): Job {
  return {
    id: "abc",
    kind: "index",
    index: "default",
    state: "running",
    summary: "",
    progress: { documents_total: 0, documents_done: 0, units_total: 0, units_embedded: 0, failures: 0, stage: "", ...progress },
    ...over,
  };
}

describe("formatSize", () => {
  it("shows bytes, then powers of 1024 with one decimal below 10", () => {
    expect(formatSize(0)).toBe("0 B");
    expect(formatSize(1023)).toBe("1023 B");
    expect(formatSize(1024)).toBe("1 KB");
    expect(formatSize(1536)).toBe("1.5 KB");
    expect(formatSize(20 * 1024 + 300)).toBe("20 KB");
    expect(formatSize(5 * 1024 ** 3)).toBe("5 GB");
    expect(formatSize(3 * 1024 ** 5)).toBe("3072 TB");
  });
  it("shows a dash when the size is unknown or nonsense", () => {
    expect(formatSize(null)).toBe("—");
    expect(formatSize(undefined)).toBe("—");
    expect(formatSize(-1)).toBe("—");
    expect(formatSize(Number.NaN)).toBe("—");
  });
});

describe("jobPercent", () => {
  it("counts documents committed of those found, floored", () => {
    expect(jobPercent(job({}, { documents_total: 3, documents_done: 1 }))).toBe(33);
    expect(jobPercent(job({}, { documents_total: 3, documents_done: 3 }))).toBe(100);
  });
  it("falls back on text units embedded when no document total is known", () => {
    expect(jobPercent(job({}, { units_total: 8, units_embedded: 2 }))).toBe(25);
  });
  it("says nothing while no total is known, and 100 once the job succeeded", () => {
    expect(jobPercent(job({ state: "queued" }))).toBeNull();
    expect(jobPercent(job({ state: "succeeded" }))).toBe(100);
  });
  it("clamps counts beyond the total and below zero", () => {
    expect(jobPercent(job({}, { documents_total: 2, documents_done: 5 }))).toBe(100);
    expect(jobPercent(job({}, { documents_total: 2, documents_done: -1 }))).toBe(0);
  });
  it("keeps where a failed or cancelled job stopped", () => {
    expect(jobPercent(job({ state: "cancelled" }, { documents_total: 4, documents_done: 1 }))).toBe(25);
  });
});

describe("jobLine and jobFailures", () => {
  it("says the stage and counts while running, the summary once ended", () => {
    expect(jobLine(job({}, { stage: "embed", documents_total: 2, documents_done: 1, units_total: 4, units_embedded: 3, failures: 1 }))).toBe(
      "embed, 1 of 2 documents, 3 of 4 text units embedded, 1 failed",
    );
    expect(jobLine(job({ state: "queued" }))).toBe("waiting to start");
    expect(jobLine(job({ state: "succeeded", summary: "2 documents found" }))).toBe("2 documents found");
  });
  it("lists failed documents and unknown delete targets", () => {
    const failed = { path: "bad.txt", reason: "binary", failures: 1, quarantined: true };
    const unknown = { path: "nope", reason: "no such document", failures: 0, quarantined: false };
    expect(jobFailures(job({ index_report: { failed: [failed] }, delete_report: { unknown: [unknown] } }))).toEqual([failed, unknown]);
    expect(jobFailures(job())).toEqual([]);
  });
});

describe("filterDocuments", () => {
  const docs = [doc("notes/Owls.md"), doc("bees.txt", { status: "quarantined" }), doc("ships.md", { status: "failed" })];
  it("filters by status and by text the path contains, ignoring case", () => {
    expect(filterDocuments(docs, { status: "", text: "" }).map((d) => d.path)).toEqual(["notes/Owls.md", "bees.txt", "ships.md"]);
    expect(filterDocuments(docs, { status: "quarantined", text: "" }).map((d) => d.path)).toEqual(["bees.txt"]);
    expect(filterDocuments(docs, { status: "", text: " owls " }).map((d) => d.path)).toEqual(["notes/Owls.md"]);
    expect(filterDocuments(docs, { status: "failed", text: "owls" })).toEqual([]);
  });
});

describe("archive grouping", () => {
  const archive: ArchiveInfo = { path: "/p/uploads/default/chat.db", source: "imessage", size_bytes: 4096 };
  const docs = [
    doc("owls.md"),
    transcript("iMessage;-;+1555::2021-05-02", { text_units: 2, updated_at: 300 }),
    transcript("iMessage;-;+1555::2021-05-01", { text_units: 1, updated_at: 200 }),
    transcript("chat42::2021-06-01..2021-06-03", { status: "quarantined", updated_at: 50 }),
  ];

  it("takes a transcript's conversation from its path", () => {
    expect(threadOf("iMessage;-;+1555::2021-05-01")).toBe("iMessage;-;+1555");
    expect(threadOf("a::b::2021-01-01..2021-01-02")).toBe("a::b");
    expect(threadOf("plain")).toBe("plain");
  });

  it("keeps files apart and groups transcripts by conversation under the archives", () => {
    const { files, messages } = groupCorpus(docs, [archive]);
    expect(files.map((d) => d.path)).toEqual(["owls.md"]);
    expect(messages).not.toBeNull();
    expect(messages!.archives).toEqual([archive]);
    expect(messages!.conversations.map((c) => c.thread)).toEqual(["chat42", "iMessage;-;+1555"]);
    const [chat42, imessage] = messages!.conversations;
    expect(imessage!.documents.map((d) => d.path)).toEqual(["iMessage;-;+1555::2021-05-01", "iMessage;-;+1555::2021-05-02"]);
    expect(imessage!.textUnits).toBe(3);
    expect(imessage!.updatedAt).toBe(300);
    expect(chat42!.status).toBe("quarantined");
    expect(messages!.transcripts).toBe(3);
    expect(messages!.textUnits).toBe(4);
    expect(messages!.status).toBe("quarantined");
  });

  it("has no message corpus without archives or transcripts, and one for transcripts alone", () => {
    expect(groupCorpus([doc("a.md")], []).messages).toBeNull();
    expect(groupCorpus([transcript("t::2021-01-01")], []).messages!.archives).toEqual([]);
    expect(groupCorpus([], [archive]).messages!.conversations).toEqual([]);
  });

  it("filters conversations and shows an archive by its own path only when the status is free", () => {
    expect(corpusRows(docs, [archive], { status: "quarantined", text: "" }).messages!.conversations.map((c) => c.thread)).toEqual(["chat42"]);
    expect(corpusRows(docs, [archive], { status: "", text: "chat.db" }).messages!.archives).toEqual([archive]);
    expect(corpusRows(docs, [archive], { status: "", text: "owls" }).messages).toBeNull();
    expect(corpusRows(docs, [archive], { status: "pending", text: "" }).messages).toBeNull();
  });
});
