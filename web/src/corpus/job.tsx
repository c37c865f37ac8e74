/** A job's live progress bar and, once it ended, its outcome: summary, failures, error. */
import { isActive, type Job, jobFailures, jobLine, jobPercent } from "./model";

const KIND: Record<Job["kind"], string> = { index: "Indexing", delete: "Deleting", reset: "Resetting" };

const ENDED: Record<string, string> = {
  succeeded: "done",
  failed: "failed",
  cancelled: "cancelled",
  interrupted: "interrupted (the server stopped; POST /v1/jobs/{id}/resume runs it again)",
};

export function JobPanel({ job }: { job: Job }) {
  const percent = jobPercent(job);
  const active = isActive(job);
  const failures = jobFailures(job);
  const tone = job.state === "succeeded" ? (failures.length ? " warn" : " ok") : active ? "" : " bad";
  return (
    <section class={`job${tone}`} aria-labelledby="job-heading" data-state={job.state} data-job={job.id}>
      <h2 id="job-heading">
        {KIND[job.kind]} “{job.index}”: {active ? job.state : (ENDED[job.state] ?? job.state)}
        <span class="muted job-id"> job {job.id}</span>
      </h2>
      <div class="job-bar">
        {percent === null ? (
          <progress key="waiting" max={100} aria-label={`${KIND[job.kind]} progress`} aria-valuetext="starting" />
        ) : (
          <progress key="counted" max={100} value={percent} aria-label={`${KIND[job.kind]} progress`} />
        )}
        <span class="job-percent" aria-hidden="true">
          {percent === null ? "…" : `${percent}%`}
        </span>
      </div>
      <p class="job-line" aria-live="polite">
        {jobLine(job)}
      </p>
      {job.error ? (
        <p class="job-error">
          {job.error.type}: {job.error.message}
        </p>
      ) : null}
      {failures.length > 0 ? (
        <details class="job-failures" open={failures.length <= 5}>
          <summary>
            {failures.length} failure{failures.length === 1 ? "" : "s"}
          </summary>
          <ul>
            {failures.map((f) => (
              <li>
                <code>{f.path}</code>: {f.reason}
                {f.quarantined ? <span class="badge quiet">quarantined</span> : null}
              </li>
            ))}
          </ul>
        </details>
      ) : null}
    </section>
  );
}
