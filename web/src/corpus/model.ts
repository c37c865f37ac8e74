/**
 * The Corpus view's logic, free of the DOM: the API shapes it reads, sizes and times as shown,
 * a job's progress as a percentage, the table's filters, and message transcripts grouped
 * under their archives and conversations.
 */

export type DocStatus = "processed" | "failed" | "quarantined" | "pending" | "deleting";
export const STATUSES: DocStatus[] = ["processed", "failed", "quarantined", "pending", "deleting"];

/** Source scope of message transcripts (`domain.messages.transcripts.MESSAGE_SCOPE`). */
export const MESSAGE_SCOPE = "messages:";

/** One document as `GET /v1/documents` lists it. */
export interface DocumentInfo {
  document_id: string;
  path: string;
  source_scope: string;
  status: DocStatus;
  text_units: number;
  updated_at: number;
  error?: string | null;
  failures: number;
  size_bytes?: number | null;
}

export interface DocumentPage {
  total: number;
  offset: number;
  documents: DocumentInfo[];
}

/** One message archive as `GET /v1/archives` lists it. */
export interface ArchiveInfo {
  path: string;
  source: string;
  size_bytes: number | null;
}

export interface JobProgress {
  documents_total: number;
  documents_done: number;
  units_total: number;
  units_embedded: number;
  failures: number;
  stage: string;
}

export interface FailedDocument {
  path: string;
  reason: string;
  failures: number;
  quarantined: boolean;
}

export type JobState = "queued" | "running" | "succeeded" | "failed" | "cancelled" | "interrupted";

/** A job as `GET /v1/jobs/{id}` and its events carry it (the fields this view reads). */
export interface Job {
  id: string;
  kind: "index" | "delete" | "reset";
  index: string;
  state: JobState;
  progress: JobProgress;
  error?: { type: string; message: string } | null;
  summary: string;
  index_report?: { failed: FailedDocument[] } | null;
  delete_report?: { unknown: FailedDocument[] } | null;
}

/** `IndexDrift` of `GET /v1/status` (the fields this view reads). */
export interface IndexDrift {
  communities: number;
  communities_without_report: number;
  entities: number;
  entities_unclustered: number;
  documents_failed: number;
  documents_pending: number;
  documents_deleting: number;
  share: number;
  threshold: number;
  reset_recommended: boolean;
  /** The graph drift is measured on: `entities` (the LLM graph); null when the index has none. */
  graph?: "entities" | null;
}

export interface QuarantinedItem {
  kind: "document" | "text unit";
  path: string;
  id: string;
  failures: number;
  error: string;
}

export interface IndexStatus {
  name: string;
  drift: IndexDrift;
  quarantined: QuarantinedItem[];
}

export interface StatusReport {
  indexes: IndexStatus[];
}

const UNITS = ["KB", "MB", "GB", "TB"];

/** A size in bytes as people read it: `512 B`, `1.5 KB`, `12 MB` (powers of 1024); `—` when unknown. */
export function formatSize(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes) || bytes < 0) return "—";
  if (bytes < 1024) return `${Math.round(bytes)} B`;
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const shown = value < 10 ? value.toFixed(1).replace(/\.0$/, "") : String(Math.round(value));
  return `${shown} ${UNITS[unit]}`;
}

/** A Unix time in seconds as a local date and time (`2026-12-02 14:05`); `—` for 0. */
export function formatTime(seconds: number): string {
  if (!seconds) return "—";
  const d = new Date(seconds * 1000);
  const two = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}`;
}

export function isActive(job: Job): boolean {
  return job.state === "queued" || job.state === "running";
}

/**
 * How far a job is, 0–100, or null while nothing says (a queued job, a run still reading):
 * documents committed of those found, else text units embedded of those found; an ended job
 * that succeeded is 100. A total of 0 says nothing; done is clamped to the total.
 */
export function jobPercent(job: Job): number | null {
  if (job.state === "succeeded") return 100;
  const p = job.progress;
  let done: number;
  let total: number;
  if (p.documents_total > 0) [done, total] = [p.documents_done, p.documents_total];
  else if (p.units_total > 0) [done, total] = [p.units_embedded, p.units_total];
  else return null;
  return Math.floor((100 * Math.min(Math.max(done, 0), total)) / total);
}

/** One line saying where a job is: `indexing: 3 of 8 documents, 1 failed`. */
export function jobLine(job: Job): string {
  const p = job.progress;
  if (job.state === "queued") return "waiting to start";
  if (!isActive(job)) return job.summary || job.state;
  const parts = [p.stage || job.kind];
  if (p.documents_total > 0) parts.push(`${p.documents_done} of ${p.documents_total} documents`);
  if (p.units_total > 0) parts.push(`${p.units_embedded} of ${p.units_total} text units embedded`);
  if (p.failures > 0) parts.push(`${p.failures} failed`);
  return parts.join(", ");
}

/** The failures a job's report names (documents that failed, delete targets unknown). */
export function jobFailures(job: Job): FailedDocument[] {
  return [...(job.index_report?.failed ?? []), ...(job.delete_report?.unknown ?? [])];
}

export interface Filter {
  /** Only this status; empty: any. */
  status: DocStatus | "";
  /** Text the path (or a transcript's conversation) contains, case-insensitive; empty: any. */
  text: string;
}

/** The documents that pass `filter`. */
export function filterDocuments(docs: DocumentInfo[], filter: Filter): DocumentInfo[] {
  const needle = filter.text.trim().toLocaleLowerCase();
  return docs.filter(
    (d) =>
      (filter.status === "" || d.status === filter.status) &&
      (needle === "" || d.path.toLocaleLowerCase().includes(needle)),
  );
}

export function isTranscript(doc: DocumentInfo): boolean {
  return doc.source_scope === MESSAGE_SCOPE;
}

/** The conversation of a transcript: its path before `::` (`thread::2021-05-01` → `thread`). */
export function threadOf(path: string): string {
  const cut = path.lastIndexOf("::");
  return cut < 0 ? path : path.slice(0, cut);
}

/** One conversation of a message corpus: its thread-day transcripts, summed up. */
export interface Conversation {
  thread: string;
  documents: DocumentInfo[];
  textUnits: number;
  updatedAt: number;
  /** The status needing the most attention among its transcripts. */
  status: DocStatus;
}

/** The message corpus of an index: the archives it is rendered from and its conversations. */
export interface MessageCorpus {
  archives: ArchiveInfo[];
  conversations: Conversation[];
  transcripts: number;
  textUnits: number;
  updatedAt: number;
  status: DocStatus;
}

const ATTENTION: DocStatus[] = ["quarantined", "failed", "deleting", "pending", "processed"];

function worst(statuses: DocStatus[]): DocStatus {
  return ATTENTION.find((s) => statuses.includes(s)) ?? "processed";
}

/**
 * Split documents into files and the message corpus: transcripts (scope `messages:`) are
 * grouped by conversation, in thread order, their days in path order. The corpus is null when
 * there is neither an archive nor a transcript. The transcripts of an index are the merge of all
 * its archives (a message in two exports is indexed once), so every archive shares them.
 */
export function groupCorpus(
  docs: DocumentInfo[],
  archives: ArchiveInfo[],
): { files: DocumentInfo[]; messages: MessageCorpus | null } {
  const files: DocumentInfo[] = [];
  const threads = new Map<string, DocumentInfo[]>();
  for (const doc of docs) {
    if (!isTranscript(doc)) {
      files.push(doc);
      continue;
    }
    const thread = threadOf(doc.path);
    const list = threads.get(thread) ?? [];
    list.push(doc);
    threads.set(thread, list);
  }
  if (threads.size === 0 && archives.length === 0) return { files, messages: null };
  const conversations = [...threads.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([thread, list]): Conversation => {
      const documents = [...list].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
      return {
        thread,
        documents,
        textUnits: documents.reduce((n, d) => n + d.text_units, 0),
        updatedAt: Math.max(0, ...documents.map((d) => d.updated_at)),
        status: worst(documents.map((d) => d.status)),
      };
    });
  return {
    files,
    messages: {
      archives: [...archives].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)),
      conversations,
      transcripts: conversations.reduce((n, c) => n + c.documents.length, 0),
      textUnits: conversations.reduce((n, c) => n + c.textUnits, 0),
      updatedAt: Math.max(0, ...conversations.map((c) => c.updatedAt)),
      status: worst(conversations.map((c) => c.status)),
    },
  };
}

/** The last part of a path (`/a/b/chat.db` → `chat.db`). */
export function baseName(path: string): string {
  const cut = path.replace(/\/+$/, "").lastIndexOf("/");
  return cut < 0 ? path : path.slice(cut + 1);
}

/**
 * What the table shows under `filter`: the files that pass it, and the message corpus with the
 * conversations whose transcripts pass it. An archive is shown when a transcript passes, or when
 * only the text filters and the archive's path contains it.
 */
export function corpusRows(
  docs: DocumentInfo[],
  archives: ArchiveInfo[],
  filter: Filter,
): { files: DocumentInfo[]; messages: MessageCorpus | null } {
  const filtered = filterDocuments(docs, filter);
  const needle = filter.text.trim().toLocaleLowerCase();
  const anyTranscript = filtered.some(isTranscript);
  const shown =
    anyTranscript || (filter.status === "" && needle === "")
      ? archives
      : filter.status === ""
        ? archives.filter((a) => a.path.toLocaleLowerCase().includes(needle))
        : [];
  return groupCorpus(filtered, shown);
}
