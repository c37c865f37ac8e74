import { afterEach, describe, expect, it, vi } from "vitest";
import { ApiError } from "../api";
import { activeJob, followJob, listDocuments } from "./api";
import type { Job } from "./model";

function job(state: Job["state"], done: number): Job {
  return {
    id: "j1",
    kind: "index",
    index: "default",
    state,
    summary: state === "succeeded" ? "2 documents found" : "",
    progress: { documents_total: 2, documents_done: done, units_total: 0, units_embedded: 0, failures: 0, stage: "index" },
  };
}

function stream(text: string): Response {
  const bytes = new TextEncoder().encode(text);
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(bytes.slice(0, 17)); // cut inside an event
      controller.enqueue(bytes.slice(17));
      controller.close();
    },
  });
  return new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
}

function json(value: unknown, status = 200): Response {
  return new Response(JSON.stringify(value), { status, headers: { "content-type": "application/json" } });
}

afterEach(() => vi.unstubAllGlobals());

describe("followJob", () => {
  it("reports the job on state, progress and end events and resolves with the ended job", async () => {
    const events =
      `event: state\ndata: ${JSON.stringify(job("running", 0))}\n\n` +
      `event: progress\ndata: ${JSON.stringify(job("running", 1))}\n\n` +
      `event: end\ndata: ${JSON.stringify(job("succeeded", 2))}\n\n`;
    const fetch = vi.fn(async () => stream(events));
    vi.stubGlobal("fetch", fetch);
    const seen: [string, number][] = [];
    const ended = await followJob("j1", (j) => seen.push([j.state, j.progress.documents_done]), new AbortController().signal);
    expect(seen).toEqual([["running", 0], ["running", 1], ["succeeded", 2]]);
    expect(ended.summary).toBe("2 documents found");
    expect(fetch).toHaveBeenCalledTimes(1);
    expect((fetch.mock.calls[0] as unknown as [string])[0]).toBe("/v1/jobs/j1/events");
  });

  it("reads the job when the stream stops before its end, and follows it again while it runs", async () => {
    const replies = [
      stream(`event: state\ndata: ${JSON.stringify(job("running", 0))}\n\n`),
      json(job("running", 1)),
      stream(`event: end\ndata: ${JSON.stringify(job("failed", 1))}\n\n`),
    ];
    vi.stubGlobal("fetch", vi.fn(async () => replies.shift()!));
    const states: string[] = [];
    const ended = await followJob("j1", (j) => states.push(j.state), new AbortController().signal);
    expect(ended.state).toBe("failed");
    expect(states).toEqual(["running", "running", "failed"]);
  });

  it("throws the typed error of a refused stream", async () => {
    vi.stubGlobal("fetch", vi.fn(async () => json({ error: { type: "NotFoundError", message: "no job 'j1'", field: "job_id" } }, 404)));
    const error = await followJob("j1", () => undefined, new AbortController().signal).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(404);
  });
});

describe("listDocuments and activeJob", () => {
  it("reads every page of documents", async () => {
    const docs = (n: number, from: number) =>
      Array.from({ length: n }, (_, i) => ({ document_id: `d${from + i}`, path: `p${from + i}` }));
    const urls: string[] = [];
    vi.stubGlobal(
      "fetch",
      vi.fn(async (url: string) => {
        urls.push(url);
        const offset = Number(new URL(url, "http://x").searchParams.get("offset"));
        return json({ total: 1500, offset, documents: docs(offset === 0 ? 1000 : 500, offset) });
      }),
    );
    const { documents, total } = await listDocuments("main");
    expect(total).toBe(1500);
    expect(documents.map((d) => d.document_id).slice(998, 1001)).toEqual(["d998", "d999", "d1000"]);
    expect(urls).toEqual(["/v1/documents?index=main&offset=0&limit=1000", "/v1/documents?index=main&offset=1000&limit=1000"]);
  });

  it("finds a running job first, else a queued one, else none", async () => {
    const replies: Record<string, Job[]> = { running: [], queued: [job("queued", 0)] };
    vi.stubGlobal(
      "fetch",
      vi.fn(async (url: string) => json(replies[new URL(url, "http://x").searchParams.get("state")!])),
    );
    expect((await activeJob(""))?.state).toBe("queued");
    replies["queued"] = [];
    expect(await activeJob("")).toBeNull();
  });
});
