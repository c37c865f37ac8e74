/** The Corpus view: the documents of an index, uploads and their jobs, deletion, drift. */
import { useEffect, useRef, useState } from "preact/hooks";
import { listIndexes } from "../api";
import type { Loaded } from "../loaded";
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
import { type Confirm, ConfirmDialog, DropZone, StatusPanel } from "./panels";
import { DocRow, MessageRows } from "./rows";
import {
  type ArchiveInfo,
  baseName,
  corpusRows,
  type DocumentInfo,
  type DocStatus,
  type Filter,
  type IndexStatus,
  isActive,
  type Job,
  STATUSES,
} from "./model";

interface Corpus {
  documents: DocumentInfo[];
  total: number;
  archives: ArchiveInfo[];
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
