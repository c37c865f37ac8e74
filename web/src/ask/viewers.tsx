/**
 * Reading evidence in place: the messages an answer rests on (grouped by thread-day), and
 * two modal viewers (`<dialog>`, closed with Escape or the Close button): a passage inside its
 * document's text, highlighted and scrolled into view; a thread-day's messages around one.
 */
import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { getJson } from "../api";
import { useLoaded } from "../loaded";
import { Problem, unauthorizedTo } from "../problem";
import type { DocumentText, MessageRef, RAGOutput, Source, ThreadDay } from "../types";
import { formatTime, groupEvidence, messageBody, passageParts, passageQuery } from "./logic";

/** What a viewer shows: a source's passage, or the thread-day of a message. */
export type Viewing =
  | { kind: "passage"; index: string; source: Source }
  | { kind: "thread"; index: string; message: MessageRef };

/** The evidence panel: the messages the answer rests on, by thread and day. */
export function Evidence({
  output,
  idPrefix,
  onThread,
}: {
  output: RAGOutput;
  idPrefix: string;
  onThread: (message: MessageRef) => void;
}) {
  const groups = groupEvidence(output);
  if (groups.length === 0) return null;
  const heading = `${idPrefix}evidence-heading`;
  return (
    <section class="evidence" aria-labelledby={heading}>
      <h3 id={heading}>Messages the answer rests on</h3>
      {groups.map((group) => (
        <div class="evidence-group">
          <p class="evidence-thread">
            <strong>{group.thread_name}</strong> <span class="muted">{group.day}</span>{" "}
            <button
              type="button"
              class="link"
              onClick={() => onThread(group.messages[0]!)}
              aria-label={`Open the thread-day: ${group.thread_name}, ${group.day}`}
            >
              Open the thread-day
            </button>
          </p>
          <ul class="messages">
            {group.messages.map((m) => (
              <MessageItem message={m} />
            ))}
          </ul>
        </div>
      ))}
    </section>
  );
}

function MessageItem({ message, focus = false }: { message: MessageRef; focus?: boolean }) {
  return (
    <li class={focus ? "message focus" : "message"} aria-current={focus ? "true" : undefined} data-guid={message.guid}>
      <span class="message-head">
        {message.label ? <span class="muted">[{message.label}] </span> : null}
        <strong>{message.sender_name}</strong> <span class="muted">{formatTime(message.timestamp)}</span>
      </span>
      {message.text ? <span class="message-text">{messageBody(message)}</span> : null}
    </li>
  );
}

/** A modal `<dialog>`: opened on mount, Escape or Close closes it (`onClose`). */
function Modal({ title, onClose, children }: { title: string; onClose: () => void; children: ComponentChildren }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (dialog && !dialog.open) dialog.showModal();
    return () => dialog?.close();
  }, []);
  return (
    <dialog ref={ref} class="viewer" aria-labelledby="viewer-heading" onClose={onClose}>
      <div class="viewer-head">
        <h2 id="viewer-heading">{title}</h2>
        <button type="button" onClick={() => ref.current?.close()}>
          Close
        </button>
      </div>
      <div class="viewer-body">{children}</div>
    </dialog>
  );
}

function useScrollTo(ready: boolean, selector: string): void {
  useEffect(() => {
    if (!ready) return;
    document.querySelector(`dialog.viewer ${selector}`)?.scrollIntoView({ block: "center" });
  }, [ready, selector]);
}

export function Viewer({
  viewing,
  onClose,
  onUnauthorized,
}: {
  viewing: Viewing;
  onClose: () => void;
  onUnauthorized: () => void;
}) {
  return viewing.kind === "passage" ? (
    <PassageViewer viewing={viewing} onClose={onClose} onUnauthorized={onUnauthorized} />
  ) : (
    <ThreadDayViewer viewing={viewing} onClose={onClose} onUnauthorized={onUnauthorized} />
  );
}

function PassageViewer({
  viewing,
  onClose,
  onUnauthorized,
}: {
  viewing: Extract<Viewing, { kind: "passage" }>;
  onClose: () => void;
  onUnauthorized: () => void;
}) {
  const { source, index } = viewing;
  const loaded = useLoaded<DocumentText>(
    (signal) =>
      getJson<DocumentText>(
        `/v1/documents/${encodeURIComponent(source.document_id ?? "")}/text`,
        { index, ...passageQuery(source) },
        signal,
      ),
    [`${index}\u0000${source.document_id}\u0000${source.start_char}`],
    unauthorizedTo(onUnauthorized),
  );
  useScrollTo(loaded.state === "ready", "mark");
  const name = source.title || source.path || "the document";
  return (
    <Modal title={`Source [${source.n}] in ${name}`} onClose={onClose}>
      {loaded.state === "loading" ? <p class="muted">Reading the document…</p> : null}
      {loaded.state === "failed" ? <Problem error={loaded.error} context="Reading the document" /> : null}
      {loaded.state === "ready" ? (
        <>
          <p class="muted">
            <code>{loaded.value.path}</code> — {loaded.value.text_units}{" "}
            {loaded.value.text_units === 1 ? "passage" : "passages"}; the text the answer saw is highlighted.
          </p>
          {loaded.value.more_before ? <p class="muted">… the document starts earlier.</p> : null}
          <div class="document-text" tabIndex={0} aria-label={`Text of ${loaded.value.path}`}>
            {passageParts(loaded.value).map((part) => (part.mark ? <mark>{part.text}</mark> : part.text))}
          </div>
          {loaded.value.more_after ? <p class="muted">… the document goes on.</p> : null}
        </>
      ) : null}
    </Modal>
  );
}

function ThreadDayViewer({
  viewing,
  onClose,
  onUnauthorized,
}: {
  viewing: Extract<Viewing, { kind: "thread" }>;
  onClose: () => void;
  onUnauthorized: () => void;
}) {
  const { message, index } = viewing;
  const [day, setDay] = useState<string | null>(null); // another day of the thread, once moved
  const loaded = useLoaded<ThreadDay>(
    (signal) =>
      getJson<ThreadDay>(
        "/v1/messages/thread-day",
        day
          ? { index, thread: message.thread_id, day }
          : { index, thread: message.thread_id, message: message.guid },
        signal,
      ),
    [`${index}\u0000${message.guid}\u0000${day ?? ""}`],
    unauthorizedTo(onUnauthorized),
  );
  useScrollTo(loaded.state === "ready", ".message.focus");
  const value = loaded.state === "ready" ? loaded.value : null;
  const at = value ? value.days.findIndex((d) => d.span === value.span) : -1;
  const before = value && at > 0 ? value.days[at - 1] : undefined;
  const after = value && at >= 0 && at < value.days.length - 1 ? value.days[at + 1] : undefined;
  const first = (span: string) => span.split("..")[0]!;
  const last = (span: string) => span.split("..").pop()!;
  return (
    <Modal title={`${message.thread_name}${value ? ` — ${value.span}` : ""}`} onClose={onClose}>
      {loaded.state === "loading" ? <p class="muted">Reading the thread…</p> : null}
      {loaded.state === "failed" ? <Problem error={loaded.error} context="Reading the thread-day" /> : null}
      {value ? (
        <>
          <nav class="day-nav" aria-label="Days of this thread">
            <button type="button" class="link" disabled={!before} onClick={() => before && setDay(last(before.span))}>
              Earlier day{before ? ` (${before.span})` : ""}
            </button>
            <button type="button" class="link" disabled={!after} onClick={() => after && setDay(first(after.span))}>
              Later day{after ? ` (${after.span})` : ""}
            </button>
          </nav>
          <ol class="messages thread-day" aria-label={`Messages of ${value.thread_name} on ${value.span}`}>
            {value.messages.map((m) => (
              <MessageItem message={m} focus={m.guid === value.focus} />
            ))}
          </ol>
        </>
      ) : null}
    </Modal>
  );
}
