/**
 * Server-Sent Events, parsed as the WHATWG HTML standard says ("event stream interpretation"),
 * from a `fetch` body: `EventSource` cannot send a POST body or an `Authorization` header.
 *
 * `SseParser` is pure and incremental: feed it text in chunks cut anywhere (inside a line,
 * between `\r` and `\n`) and it returns the events completed so far. `readEvents` decodes a
 * byte stream (UTF-8, a character may be split across chunks) and yields its events.
 */

/** One dispatched event: its type (`message` when the stream names none), data and id. */
export interface SseEvent {
  event: string;
  data: string;
  id: string;
}

export class SseParser {
  private buffer = "";
  private data: string[] = [];
  private eventType = "";
  private lastId = "";
  private started = false;
  private pendingCR = false;

  /** Parse `chunk`; return the events it completes, in order. */
  feed(chunk: string): SseEvent[] {
    let text = chunk;
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1); // one leading BOM is ignored
    }
    if (this.pendingCR && text.startsWith("\n")) text = text.slice(1); // "\r" | "\n" split
    this.pendingCR = false;
    this.buffer += text;
    const events: SseEvent[] = [];
    const lineEnd = /\r\n|\r|\n/g;
    let start = 0;
    let match: RegExpExecArray | null;
    while ((match = lineEnd.exec(this.buffer)) !== null) {
      if (match[0] === "\r" && match.index === this.buffer.length - 1) {
        this.pendingCR = true; // a "\n" may follow in the next chunk: same line end
      }
      const event = this.line(this.buffer.slice(start, match.index));
      if (event !== null) events.push(event);
      start = lineEnd.lastIndex;
    }
    this.buffer = this.buffer.slice(start);
    return events;
  }

  /** The stream ended: an event not ended by a blank line is discarded, as the standard says. */
  end(): void {
    this.buffer = "";
    this.data = [];
    this.eventType = "";
    this.pendingCR = false;
  }

  private line(line: string): SseEvent | null {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) return null; // a comment (keep-alive)
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "event":
        this.eventType = value;
        break;
      case "data":
        this.data.push(value);
        break;
      case "id":
        if (!value.includes("\0")) this.lastId = value;
        break;
      default: // "retry" and unknown fields: nothing for a fetch reader to do
        break;
    }
    return null;
  }

  private dispatch(): SseEvent | null {
    const data = this.data;
    const eventType = this.eventType;
    this.data = [];
    this.eventType = "";
    if (data.length === 0) return null;
    return { event: eventType || "message", data: data.join("\n"), id: this.lastId };
  }
}

/** Yield the events of a byte stream (a `fetch` response body) as they complete. */
export async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder("utf-8");
  const parser = new SseParser();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      yield* parser.feed(decoder.decode(value, { stream: true }));
    }
    yield* parser.feed(decoder.decode());
    parser.end();
  } finally {
    reader.releaseLock();
  }
}
