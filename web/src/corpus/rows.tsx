/** The Corpus view's table rows: a document, an archive and its conversations. */
import { type ComponentChildren, Fragment } from "preact";
import { baseName, type ArchiveInfo, type DocStatus, type DocumentInfo, formatSize, formatTime, type MessageCorpus } from "./model";

export function StatusBadge({ status }: { status: DocStatus }) {
  return <span class={`status status-${status}`}>{status}</span>;
}

export function Actions({ children }: { children: ComponentChildren }) {
  return <div class="row-actions">{children}</div>;
}

export function DocRow({
  doc,
  busy,
  onDelete,
  onRetry,
  nested = false,
}: {
  doc: DocumentInfo;
  busy: boolean;
  onDelete?: (doc: DocumentInfo) => void;
  onRetry: (doc: DocumentInfo) => void;
  nested?: boolean;
}) {
  const retryable = doc.status === "quarantined" || doc.status === "failed";
  return (
    <tr class={`doc-row status-row-${doc.status}${nested ? " nested-2" : ""}`} data-path={doc.path}>
      <th scope="row" class="path">
        <span title={doc.source_scope}>{doc.path}</span>
        {doc.error ? (
          <span class="doc-error">
            {doc.failures > 0 ? `${doc.failures} failed run${doc.failures === 1 ? "" : "s"}: ` : ""}
            {doc.error}
          </span>
        ) : null}
      </th>
      <td>
        <StatusBadge status={doc.status} />
      </td>
      <td class="num">{formatSize(doc.size_bytes)}</td>
      <td class="num">{doc.text_units}</td>
      <td>{formatTime(doc.updated_at)}</td>
      <td>
        <Actions>
          {retryable ? (
            <button type="button" class="small" disabled={busy} onClick={() => onRetry(doc)} aria-label={`Retry ${doc.path}`}>
              Retry
            </button>
          ) : null}
          {onDelete ? (
            <button type="button" class="small danger" disabled={busy} onClick={() => onDelete(doc)} aria-label={`Delete ${doc.path}`}>
              Delete
            </button>
          ) : null}
        </Actions>
      </td>
    </tr>
  );
}

export function Disclosure({ open, onToggle, label }: { open: boolean; onToggle: () => void; label: string }) {
  return (
    <button type="button" class="disclosure" aria-expanded={open} onClick={onToggle} aria-label={`${open ? "Hide" : "Show"} ${label}`}>
      {open ? "▾" : "▸"}
    </button>
  );
}

export function MessageRows({
  messages,
  expanded,
  toggle,
  busy,
  onDelete,
  onRetry,
}: {
  messages: MessageCorpus;
  expanded: Set<string>;
  toggle: (key: string) => void;
  busy: boolean;
  onDelete: (archive: ArchiveInfo) => void;
  onRetry: (doc: DocumentInfo) => void;
}) {
  const groups: (ArchiveInfo | null)[] = messages.archives.length > 0 ? messages.archives : [null];
  const shared = messages.archives.length > 1;
  return (
    <>
      {groups.map((archive) => {
        const key = `archive:${archive?.path ?? ""}`;
        const open = expanded.has(key);
        const name = archive ? baseName(archive.path) : "Message transcripts";
        return (
          <Fragment key={key}>
            <tr class="archive-row" data-archive={archive?.path ?? ""}>
              <th scope="row" class="path">
                <Disclosure open={open} onToggle={() => toggle(key)} label={`the conversations of ${name}`} />
                <span title={archive?.path}>{name}</span>
                <span class="badge quiet">message archive{archive ? ` · ${archive.source}` : ""}</span>
                <span class="doc-note">
                  {messages.conversations.length} conversation{messages.conversations.length === 1 ? "" : "s"},{" "}
                  {messages.transcripts} thread-day document{messages.transcripts === 1 ? "" : "s"}
                  {shared ? ` (merged from ${messages.archives.length} archives)` : ""}
                </span>
              </th>
              <td>{messages.transcripts > 0 ? <StatusBadge status={messages.status} /> : null}</td>
              <td class="num">{formatSize(archive?.size_bytes)}</td>
              <td class="num">{messages.textUnits}</td>
              <td>{formatTime(messages.updatedAt)}</td>
              <td>
                {archive ? (
                  <Actions>
                    <button type="button" class="small danger" disabled={busy} onClick={() => onDelete(archive)} aria-label={`Delete archive ${name}`}>
                      Delete
                    </button>
                  </Actions>
                ) : null}
              </td>
            </tr>
            {open
              ? messages.conversations.map((c) => {
                  const ckey = `${key}|${c.thread}`;
                  const copen = expanded.has(ckey);
                  return (
                    <Fragment key={ckey}>
                      <tr class="conversation-row nested-1">
                        <th scope="row" class="path">
                          <Disclosure open={copen} onToggle={() => toggle(ckey)} label={`the days of conversation ${c.thread}`} />
                          <span>{c.thread}</span>
                          <span class="doc-note">
                            {c.documents.length} thread-day document{c.documents.length === 1 ? "" : "s"}
                          </span>
                        </th>
                        <td>
                          <StatusBadge status={c.status} />
                        </td>
                        <td class="num">—</td>
                        <td class="num">{c.textUnits}</td>
                        <td>{formatTime(c.updatedAt)}</td>
                        <td />
                      </tr>
                      {copen
                        ? c.documents.map((d) => <DocRow key={d.document_id} doc={d} busy={busy} onRetry={onRetry} nested />)
                        : null}
                    </Fragment>
                  );
                })
              : null}
          </Fragment>
        );
      })}
    </>
  );
}
