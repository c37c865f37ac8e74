import { describe, expect, it } from "vitest";
import { readEvents, SseParser, type SseEvent } from "./sse";

function parseAll(chunks: string[]): SseEvent[] {
  const parser = new SseParser();
  return chunks.flatMap((chunk) => parser.feed(chunk));
}

const SERVICE_STREAM =
  'event: delta\ndata: {"text": "The barn owl"}\n\n' +
  'event: delta\ndata: {"text": " hunts voles."}\n\n' +
  'event: result\ndata: {"answer": "The barn owl hunts voles.", "cited": [1]}\n\n';

describe("SseParser", () => {
  it("parses the service's delta and result events", () => {
    const events = parseAll([SERVICE_STREAM]);
    expect(events.map((e) => e.event)).toEqual(["delta", "delta", "result"]);
    expect(JSON.parse(events[2]!.data)).toEqual({ answer: "The barn owl hunts voles.", cited: [1] });
  });

  it("gives the same events however the text is cut", () => {
    const whole = parseAll([SERVICE_STREAM]);
    for (let cut = 0; cut <= SERVICE_STREAM.length; cut++) {
      expect(parseAll([SERVICE_STREAM.slice(0, cut), SERVICE_STREAM.slice(cut)])).toEqual(whole);
    }
    expect(parseAll([...SERVICE_STREAM])).toEqual(whole);
  });

  it("accepts CRLF, CR and LF line ends, a CRLF split across chunks too", () => {
    const expected = [{ event: "a", data: "1", id: "" }, { event: "b", data: "2", id: "" }];
    expect(parseAll(["event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\r"])).toEqual(expected);
    expect(parseAll(["event: a\r", "\ndata: 1\r", "\n\r", "\nevent: b\ndata: 2\n\n"])).toEqual(expected);
  });

  it("joins multi-line data with newlines and strips one leading space only", () => {
    expect(parseAll(["data:  two spaces\ndata:none\ndata\n\n"])).toEqual([
      { event: "message", data: " two spaces\nnone\n", id: "" },
    ]);
  });

  it("ignores comments, unknown fields and retry, and events without data", () => {
    expect(parseAll([": keep-alive\n\nretry: 10\nfoo: bar\n\nevent: empty\n\ndata: x\n\n"])).toEqual([
      { event: "message", data: "x", id: "" },
    ]);
  });

  it("keeps the last id, and the event type resets after each dispatch", () => {
    expect(parseAll(["id: 7\nevent: progress\ndata: a\n\ndata: b\n\n"])).toEqual([
      { event: "progress", data: "a", id: "7" },
      { event: "message", data: "b", id: "7" },
    ]);
  });

  it("drops a leading byte order mark and an event the stream never ended", () => {
    const parser = new SseParser();
    expect(parser.feed("\ufeffdata: 1\n\ndata: unfinished\n")).toEqual([{ event: "message", data: "1", id: "" }]);
    parser.end();
    expect(parser.feed("\n")).toEqual([]);
  });
});

describe("readEvents", () => {
  it("decodes UTF-8 split inside a character across chunks", async () => {
    const bytes = new TextEncoder().encode('event: delta\ndata: {"text": "“Owls” – é"}\n\n');
    const chunks = [...bytes].map((b) => new Uint8Array([b])); // one byte per chunk
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(chunk);
        controller.close();
      },
    });
    const events: SseEvent[] = [];
    for await (const event of readEvents(body)) events.push(event);
    expect(events).toEqual([{ event: "delta", data: '{"text": "“Owls” – é"}', id: "" }]);
  });
});
