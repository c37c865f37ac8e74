/** The HTTP calls of the Corpus view: documents, archives, status, jobs and their events. */
import { ApiError, getJson, headers, send, sendJson } from "../api";
import { readEvents } from "../sse";
import type { ArchiveInfo, DocumentInfo, DocumentPage, Job, StatusReport } from "./model";

/** Most documents the view reads (pages of 1,000); the table says when there are more. */
export const MAX_DOCUMENTS = 20_000;

const PAGE = 1000;

/** `GET /v1/documents`, every page up to `MAX_DOCUMENTS`; with the total the index holds. */
export async function listDocuments(
  index: string,
  signal?: AbortSignal,
): Promise<{ documents: DocumentInfo[]; total: number }> {
  const documents: DocumentInfo[] = [];
  let total = 0;
  do {
    const page = await getJson<DocumentPage>(
      "/v1/documents",
      { index: index || undefined, offset: documents.length, limit: PAGE },
      signal,
    );
    total = page.total;
    documents.push(...page.documents);
    if (page.documents.length === 0) break;
  } while (documents.length < total && documents.length < MAX_DOCUMENTS);
  return { documents, total };
}

/** `GET /v1/archives`: the message archives of the index. */
export function listArchives(index: string, signal?: AbortSignal): Promise<ArchiveInfo[]> {
  return getJson<ArchiveInfo[]>("/v1/archives", { index: index || undefined }, signal);
}

/** `GET /v1/status`: every index's drift and quarantined items. */
export function getStatus(signal?: AbortSignal): Promise<StatusReport> {
  return getJson<StatusReport>("/v1/status", {}, signal);
}

/** The index's job that is queued or running, if any (`GET /v1/jobs`). */
export async function activeJob(index: string, signal?: AbortSignal): Promise<Job | null> {
  for (const state of ["running", "queued"]) {
    const jobs = await getJson<Job[]>("/v1/jobs", { index: index || undefined, state, limit: 1 }, signal);
    if (jobs[0]) return jobs[0];
  }
  return null;
}

/** `POST /v1/documents` (multipart `files`, `index`): upload files and index them in a job. */
export async function uploadFiles(index: string, files: File[]): Promise<Job> {
  const form = new FormData();
  if (index) form.append("index", index);
  for (const file of files) form.append("files", file, file.name);
  const response = await send("/v1/documents", { method: "POST", headers: headers(true), body: form });
  return (await response.json()) as Job;
}

function query(params: Record<string, string>): string {
  const search = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== ""));
  const text = search.toString();
  return text ? `?${text}` : "";
}

/**
 * `DELETE /v1/documents/{id}`, or by path for an archive (`DELETE /v1/documents?path=`), in a
 * job. `confirm`: the person confirmed it in the view's dialog, so the mass-deletion guard
 * (`indexing.max_delete_share`, meant for folders that vanish) does not ask again.
 */
export function deleteDocument(index: string, target: { id: string } | { path: string }): Promise<Job> {
  const url =
    "id" in target
      ? `/v1/documents/${encodeURIComponent(target.id)}${query({ index, confirm: "true" })}`
      : `/v1/documents${query({ path: target.path, index, confirm: "true" })}`;
  return sendJson<Job>("DELETE", url, undefined);
}

/** `POST /v1/documents/{id}/retry`: index the document's file again, quarantined items too. */
export function retryDocument(index: string, id: string): Promise<Job> {
  return sendJson<Job>("POST", `/v1/documents/${encodeURIComponent(id)}/retry${query({ index })}`, undefined);
}

/** `POST /v1/indexes/{index}/reset`: rebuild the index in place (needs the `admin` scope). */
export function resetIndex(index: string): Promise<Job> {
  return sendJson<Job>("POST", `/v1/indexes/${encodeURIComponent(index)}/reset`, undefined);
}

/**
 * Follow a job by its events (`GET /v1/jobs/{id}/events`): `onJob` is called with the job on
 * `state`, each `progress` and `end`; resolves with the ended job. A stream that stops before
 * `end` (a proxy's timeout) is read again once the job is fetched and still running.
 */
export async function followJob(id: string, onJob: (job: Job) => void, signal: AbortSignal): Promise<Job> {
  for (;;) {
    const response = await send(`/v1/jobs/${encodeURIComponent(id)}/events`, { headers: headers(false), signal });
    if (!response.body) throw new ApiError(response.status, "HTTPError", "the reply has no body");
    for await (const event of readEvents(response.body)) {
      const job = JSON.parse(event.data) as Job;
      onJob(job);
      if (event.event === "end") return job;
    }
    const job = await getJson<Job>(`/v1/jobs/${encodeURIComponent(id)}`, {}, signal);
    onJob(job);
    if (job.state !== "queued" && job.state !== "running") return job;
  }
}
