/** The Corpus view's panels: the index's drift and quarantine, the drop zone, the confirmation dialog. */
import { useEffect, useRef, useState } from "preact/hooks";
import type { DocumentInfo, IndexStatus, Job } from "./model";

/** An action waiting for the person's confirmation in the dialog. */
export interface Confirm {
  title: string;
  message: string;
  label: string;
  context: string;
  run: () => Promise<Job>;
}

export function StatusPanel({
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

export function DropZone({ onFiles, busy }: { onFiles: (files: File[]) => void; busy: boolean }) {
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

export function ConfirmDialog({
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
