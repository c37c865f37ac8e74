/** The Corpus view: the documents of an index, uploads and their jobs, deletion, drift. */
import { type ComponentChildren, Fragment } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { listIndexes } from "../api";
import { isUnauthorized, Problem } from "../problem";
import type { IndexCatalog } from "../types";
import type { ViewProps } from "../view";
import {
  activeJob,
  deleteDocument,
  followJob,
  getStatus,
  listArchives,
  listDocuments,
  resetIndex,
  retryDocument,
  uploadFiles,
} from "./api";
import "./corpus.css";
import { JobPanel } from "./job";
import {
  type ArchiveInfo,
  baseName,
  corpusRows,
  type DocumentInfo,
  type DocStatus,
  type Filter,
  formatSize,
  formatTime,
  type IndexStatus,
  isActive,
  type Job,
  type MessageCorpus,
  STATUSES,
} from "./model";

type Loaded<T> = { state: "loading" } | { state: "ready"; value: T } | { state: "failed"; error: unknown };

interface Corpus {
  documents: DocumentInfo[];
  total: number;
  archives: ArchiveInfo[];
}

/** An action waiting for the person's confirmation in the dialog. */
interface Confirm {
  title: string;
  message: string;
  label: string;
  context: string;
  run: () => Promise<Job>;
}

export function Corpus({ keyVersion, onUnauthorized }: ViewProps) {
  const [catalogs, setCatalogs] = useState<Loaded<IndexCatalog[]>>({ state: "loading" });
  const [index, setIndex] = useState("");
  const [corpus, setCorpus] = useState<Loaded<Corpus>>({ state: "loading" });
  const [status, setStatus] = useState<IndexStatus | null>(null);
  const [job, setJob] = useState<Job | null>(null);
  const [problem, setProblem] = useState<{ error: unknown; context: string } | null>(null);
  const [filter, setFilter] = useState<Filter>({ status: "", text: "" });
  const [expanded, setExpanded] = useState<Set<string>>(new Set());
  const [confirm, setConfirm] = useState<Confirm | null>(null);
  const [reload, setReload] = useState(0);
  const following = useRef<AbortController | null>(null);

  const failed = (error: unknown, context: string) => {
    if (isUnauthorized(error)) onUnauthorized();
    setProblem({ error, context });
  };

  useEffect(() => {
    const controller = new AbortController();
    setCatalogs({ state: "loading" });
    listIndexes(controller.signal).then(
      (list) => {
        setCatalogs({ state: "ready", value: list });
        setIndex((current) => (list.some((c) => c.index === current) ? current : (list[0]?.index ?? "")));
      },
      (error: unknown) => {
        if (controller.signal.aborted) return;
        if (isUnauthorized(error)) onUnauthorized();
        setCatalogs({ state: "failed", error });
      },
    );
    return () => controller.abort();
  }, [keyVersion]);

  // The index's documents, archives and status; again after every job.
  useEffect(() => {
    if (catalogs.state !== "ready") return;
    const controller = new AbortController();
    const { signal } = controller;
    Promise.all([listDocuments(index, signal), listArchives(index, signal)]).then(
      ([{ documents, total }, archives]) => setCorpus({ state: "ready", value: { documents, total, archives } }),
      (error: unknown) => {
        if (signal.aborted) return;
        if (isUnauthorized(error)) onUnauthorized();
        setCorpus({ state: "failed", error });
      },
    );
    getStatus(signal).then(
      (report) => setStatus(report.indexes.find((i) => i.name === (index || report.indexes[0]?.name)) ?? null),
      () => setStatus(null), // the table still shows; status is extra
    );
    return () => controller.abort();
  }, [catalogs.state, index, reload, keyVersion]);

  // A job already running on the index when the view opens (or the index changes) is followed.
  useEffect(() => {
    if (catalogs.state !== "ready") return;
    const controller = new AbortController();
    activeJob(index, controller.signal).then(
      (running) => {
        if (running && !controller.signal.aborted) track(running);
      },
      () => undefined,
    );
    return () => controller.abort();
  }, [catalogs.state, index, keyVersion]);

  useEffect(() => () => following.current?.abort(), []);

  /** Show `started` and follow its events until it ends, then read the corpus again. */
  const track = (started: Job) => {
    following.current?.abort();
    const controller = new AbortController();
    following.current = controller;
    setJob(started);
    followJob(started.id, setJob, controller.signal).then(
      () => {
        setReload((n) => n + 1);
        // the index picker's text-unit counts, and an index the job created
        listIndexes(controller.signal).then((list) => setCatalogs({ state: "ready", value: list }), () => undefined);
      },
      (error: unknown) => {
        if (!controller.signal.aborted) failed(error, `Following job ${started.id}`);
      },
    );
  };

  const start = async (context: string, run: () => Promise<Job>) => {
    setProblem(null);
    try {
      track(await run());
    } catch (error) {
      failed(error, context);
    }
  };

  const upload = (files: File[]) => {
    if (files.length === 0) return;
    const what = files.length === 1 ? `“${files[0]!.name}”` : `${files.length} files`;
    void start(`Uploading ${what}`, () => uploadFiles(index, files));
  };

  const running = job !== null && isActive(job);
  const toggle = (key: string) =>
    setExpanded((old) => {
      const next = new Set(old);
      if (next.has(key)) next.delete(key);
      else next.add(key);
      return next;
    });

  const askDelete = (doc: DocumentInfo) =>
    setConfirm({
      title: "Delete this document?",
      message: `“${doc.path}” and its ${doc.text_units} text units leave index “${index || "default"}”. An uploaded file is removed too; a file elsewhere stays on disk.`,
      label: "Delete",
      context: `Deleting “${doc.path}”`,
      run: () => deleteDocument(index, { id: doc.document_id }),
    });
  const askDeleteArchive = (archive: ArchiveInfo) =>
    setConfirm({
      title: "Delete this message archive?",
      message: `The messages only “${baseName(archive.path)}” holds leave index “${index || "default"}”; the conversations are rendered again from the other archives.`,
      label: "Delete archive",
      context: `Deleting “${baseName(archive.path)}”`,
      run: () => deleteDocument(index, { path: archive.path }),
    });
  const askReset = (name: string) =>
    setConfirm({
      title: `Reset index “${name}”?`,
      message:
        "Every document whose file is still on disk is processed again and the graphs are derived again (stored vectors and cached model replies are reused). Queries keep working meanwhile. Needs an API key with the admin scope.",
      label: "Reset index",
      context: `Resetting “${name}”`,
      run: () => resetIndex(name),
    });
  const retry = (doc: DocumentInfo) => void start(`Retrying “${doc.path}”`, () => retryDocument(index, doc.document_id));

  const catalogList = catalogs.state === "ready" ? catalogs.value : [];
  const rows = corpus.state === "ready" ? corpusRows(corpus.value.documents, corpus.value.archives, filter) : null;

  return (
    <div class="corpus">
      <div class="corpus-bar">
        {catalogs.state === "failed" ? <Problem error={catalogs.error} context="Listing the indexes" /> : null}
        {catalogs.state === "ready" && catalogList.length > 0 ? (
          <div class="field">
            <label for="corpus-index">Index</label>
            <select id="corpus-index" value={index} onChange={(e) => setIndex(e.currentTarget.value)}>
              {catalogList.map((c) => (
                <option value={c.index}>
                  {c.index} ({c.text_units} text units)
                </option>
              ))}
            </select>
          </div>
        ) : null}
        {catalogs.state === "ready" && catalogList.length === 0 ? (
          <p class="muted">No index yet: upload files below to create the default index.</p>
        ) : null}
        <button type="button" class="link" onClick={() => setReload((n) => n + 1)}>
          Refresh
        </button>
      </div>

      {status ? (
        <StatusPanel status={status} documents={corpus.state === "ready" ? corpus.value.documents : []} onReset={askReset} onRetry={retry} busy={running} />
      ) : null}

      <DropZone onFiles={upload} busy={running} />
      {problem ? <Problem error={problem.error} context={problem.context} /> : null}
      {job ? <JobPanel job={job} /> : null}

      <section class="documents" aria-labelledby="documents-heading">
        <h2 id="documents-heading">Documents</h2>
        <div class="filters" role="search" aria-label="Filter the documents">
          <div class="field">
            <label for="filter-status">Status</label>
            <select
              id="filter-status"
              value={filter.status}
              onChange={(e) => setFilter({ ...filter, status: e.currentTarget.value as DocStatus | "" })}
            >
              <option value="">any</option>
              {STATUSES.map((s) => (
                <option value={s}>{s}</option>
              ))}
            </select>
          </div>
          <div class="field">
            <label for="filter-text">Path contains</label>
            <input
              id="filter-text"
              type="search"
              value={filter.text}
              onInput={(e) => setFilter({ ...filter, text: e.currentTarget.value })}
            />
          </div>
        </div>
        {corpus.state === "loading" ? <p class="muted">Loading the documents…</p> : null}
        {corpus.state === "failed" ? <Problem error={corpus.error} context="Listing the documents" /> : null}
        {corpus.state === "ready" && rows ? (
          <>
            <p class="muted count" aria-live="polite">
              {rows.files.length + (rows.messages?.transcripts ?? 0)} of {corpus.value.total} documents shown
              {corpus.value.documents.length < corpus.value.total
                ? ` (the first ${corpus.value.documents.length} read)`
                : ""}
            </p>
            <table class="doc-table">
              <thead>
                <tr>
                  <th scope="col">Path</th>
                  <th scope="col">Status</th>
                  <th scope="col" class="num">Size</th>
                  <th scope="col" class="num">Text units</th>
                  <th scope="col">Last indexed</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {rows.messages ? (
                  <MessageRows
                    messages={rows.messages}
                    expanded={expanded}
                    toggle={toggle}
                    busy={running}
                    onDelete={askDeleteArchive}
                    onRetry={retry}
                  />
                ) : null}
                {rows.files.map((doc) => (
                  <DocRow key={doc.document_id} doc={doc} busy={running} onDelete={askDelete} onRetry={retry} />
                ))}
                {rows.files.length === 0 && !rows.messages ? (
                  <tr>
                    <td colSpan={6} class="muted">
                      {corpus.value.total === 0 ? "No documents yet: upload some above." : "No document matches the filters."}
                    </td>
                  </tr>
                ) : null}
              </tbody>
            </table>
          </>
        ) : null}
      </section>

      <ConfirmDialog
        confirm={confirm}
        onClose={() => setConfirm(null)}
        onConfirm={(c) => {
          setConfirm(null);
          void start(c.context, c.run);
        }}
      />
    </div>
  );
}

function StatusBadge({ status }: { status: DocStatus }) {
  return <span class={`status status-${status}`}>{status}</span>;
}

function Actions({ children }: { children: ComponentChildren }) {
  return <div class="row-actions">{children}</div>;
}

function DocRow({
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

function Disclosure({ open, onToggle, label }: { open: boolean; onToggle: () => void; label: string }) {
  return (
    <button type="button" class="disclosure" aria-expanded={open} onClick={onToggle} aria-label={`${open ? "Hide" : "Show"} ${label}`}>
      {open ? "▾" : "▸"}
    </button>
  );
}

function MessageRows({
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

function StatusPanel({
  status,
  documents,
  onReset,
  onRetry,
  busy,
}: {
  status: IndexStatus;
  documents: DocumentInfo[];
  onReset: (name: string) => void;
  onRetry: (doc: DocumentInfo) => void;
  busy: boolean;
}) {
  const d = status.drift;
  const pct = (x: number) => `${Math.round(x * 100)}%`;
  const byPath = new Map(documents.map((doc) => [doc.path, doc]));
  const byId = new Map(documents.map((doc) => [doc.document_id, doc]));
  const others = [
    d.communities_without_report ? `${d.communities_without_report} of ${d.communities} communities without a report` : "",
    d.entities_unclustered ? `${d.entities_unclustered} of ${d.entities} entities in no community` : "",
    d.documents_failed ? `${d.documents_failed} document${d.documents_failed === 1 ? "" : "s"} failed` : "",
    d.documents_pending ? `${d.documents_pending} pending` : "",
    d.documents_deleting ? `${d.documents_deleting} deleting` : "",
  ].filter(Boolean);
  return (
    <section class="index-status" aria-labelledby="status-heading">
      <h2 id="status-heading">Index “{status.name}”</h2>
      <div class={`drift${d.reset_recommended ? " notice warn" : ""}`} data-recommended={String(d.reset_recommended)}>
        <p>
          {d.communities > 0 ? (
            <>
              <strong>Drift {pct(d.share)}</strong> of communities without a report (reset recommended above{" "}
              {pct(d.threshold)}, <code>indexing.reset_drift_share</code>)
              {d.reset_recommended ? ": a reset rebuilds the index in place." : "."}
            </>
          ) : d.graph === "entities" ? (
            <>
              <strong>No drift</strong> in the entity graph's communities: it has none.
            </>
          ) : (
            <>
              <strong>No drift measured</strong>: drift concerns the LLM entity graph's communities, and this index has no
              entity graph (its concept graph is not measured).
            </>
          )}
          {others.length ? <span class="muted"> {others.join("; ")}.</span> : null}
        </p>
        <button type="button" class={d.reset_recommended ? "" : "secondary"} disabled={busy} onClick={() => onReset(status.name)}>
          Reset index
        </button>
      </div>
      {status.quarantined.length > 0 ? (
        <div class="quarantine notice warn">
          <p>
            <strong>{status.quarantined.length} quarantined</strong>: they failed on consecutive runs and are skipped until
            their content changes or they are retried.
          </p>
          <ul>
            {status.quarantined.map((item) => {
              const doc = item.kind === "document" ? byId.get(item.id) : byPath.get(item.path);
              return (
                <li>
                  {item.kind} <code>{item.path}</code>, {item.failures} failed run{item.failures === 1 ? "" : "s"}: {item.error}{" "}
                  {doc ? (
                    <button type="button" class="small" disabled={busy} onClick={() => onRetry(doc)} aria-label={`Retry ${item.kind} ${item.path}`}>
                      Retry
                    </button>
                  ) : null}
                </li>
              );
            })}
          </ul>
        </div>
      ) : null}
    </section>
  );
}

function DropZone({ onFiles, busy }: { onFiles: (files: File[]) => void; busy: boolean }) {
  const [over, setOver] = useState(false);
  return (
    <section
      class={`dropzone${over ? " over" : ""}`}
      aria-labelledby="upload-heading"
      onDragOver={(e) => {
        e.preventDefault();
        if (e.dataTransfer) e.dataTransfer.dropEffect = busy ? "none" : "copy";
        setOver(true);
      }}
      onDragLeave={() => setOver(false)}
      onDrop={(e) => {
        e.preventDefault();
        setOver(false);
        if (!busy) onFiles([...(e.dataTransfer?.files ?? [])]);
      }}
    >
      <h2 id="upload-heading">Add documents</h2>
      <p class="muted">
        Drop files here, or choose them. They are kept in the project's <code>uploads/</code> folder and indexed in a job;
        uploading a name again replaces its document. Message archives (<code>chat.db</code>, JSON Lines) are recognised.
      </p>
      <label class="file-button">
        Choose files
        <input
          type="file"
          multiple
          disabled={busy}
          onChange={(e) => {
            const input = e.currentTarget;
            onFiles([...(input.files ?? [])]);
            input.value = "";
          }}
        />
      </label>
      {busy ? <span class="muted"> A job is running on this index: wait for it to end.</span> : null}
    </section>
  );
}

function ConfirmDialog({
  confirm,
  onClose,
  onConfirm,
}: {
  confirm: Confirm | null;
  onClose: () => void;
  onConfirm: (c: Confirm) => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (confirm && !dialog.open) dialog.showModal();
    if (!confirm && dialog.open) dialog.close();
  }, [confirm]);
  return (
    <dialog ref={ref} class="confirm" aria-labelledby="confirm-title" onClose={onClose}>
      {confirm ? (
        <form method="dialog" onSubmit={(e) => e.preventDefault()}>
          <h2 id="confirm-title">{confirm.title}</h2>
          <p>{confirm.message}</p>
          <div class="actions">
            <button type="button" class="secondary" onClick={onClose} autoFocus>
              Cancel
            </button>
            <button type="button" class="danger" onClick={() => onConfirm(confirm)}>
              {confirm.label}
            </button>
          </div>
        </form>
      ) : null}
    </dialog>
  );
}
