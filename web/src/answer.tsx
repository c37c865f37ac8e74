/** An answer: its text with citation links, what a reader must be told about it, and its cost. */
import type { RAGOutput } from "./types";

const CITATION = /\[(\d+)(?:\.\d+)?\]/g;

/** The answer's text, each `[n]` a link to source n; every part is a text node (escaped). */
export function AnswerText({ text, sourceNumbers }: { text: string; sourceNumbers: Set<number> }) {
  const parts: (string | preact.JSX.Element)[] = [];
  let last = 0;
  for (const match of text.matchAll(CITATION)) {
    const n = Number(match[1]);
    if (!sourceNumbers.has(n)) continue;
    parts.push(text.slice(last, match.index));
    parts.push(
      <a href={`#source-${n}`} class="citation" onClick={(e) => openSource(e, n)}>
        {match[0]}
      </a>,
    );
    last = match.index + match[0].length;
  }
  parts.push(text.slice(last));
  return <p class="answer-text">{parts}</p>;
}

function openSource(event: MouseEvent, n: number): void {
  const details = document.querySelector<HTMLDetailsElement>(`#source-${n} details`);
  if (!details) return;
  event.preventDefault();
  details.open = true;
  details.querySelector("summary")?.focus();
}

/** One line per thing to flag: cannot answer, a weak match, the deadline, a cut answer. */
export function Notices({ output }: { output: RAGOutput }) {
  const meta = output.metadata;
  const notices: { tone: "warn" | "info"; text: string }[] = [];
  if (output.answer_kind === "cannot_answer") {
    notices.push({
      tone: "info",
      text: `Cannot answer from the sources${meta.cannot_answer ? `: ${meta.cannot_answer}` : "."}`,
    });
  }
  if (meta.match?.verdict === "weak") {
    notices.push({
      tone: "warn",
      text:
        `Weak match: the passages found may not answer this question ` +
        `(coverage ${meta.match.coverage.toFixed(2)}, similarity ${meta.match.similarity.toFixed(2)}).`,
    });
  }
  if (meta.deadline_hit) {
    notices.push({
      tone: "warn",
      text: "The query's deadline passed: the answer rests on what was found in time.",
    });
  }
  if (meta.answer_complete === false) {
    notices.push({
      tone: "warn",
      text: `The answer was cut${meta.finish_reason ? ` (${meta.finish_reason})` : ""}.`,
    });
  }
  if (meta.invalid_citations && meta.invalid_citations.length > 0) {
    notices.push({
      tone: "warn",
      text: `The answer cites labels that name no source: ${meta.invalid_citations.join(", ")}.`,
    });
  }
  if (notices.length === 0) return null;
  return (
    <ul class="notices">
      {notices.map((notice) => (
        <li class={`notice ${notice.tone}`} role={notice.tone === "warn" ? "alert" : undefined}>
          {notice.text}
        </li>
      ))}
    </ul>
  );
}

/** Where the time went (`timings_ms`) and what the query used (`usage`). */
export function Costs({ output }: { output: RAGOutput }) {
  const { usage, timings_ms: timings } = output;
  return (
    <section aria-labelledby="costs-heading" class="costs">
      <h3 id="costs-heading">Timings and usage</h3>
      <dl class="facts">
        {Object.entries(timings).map(([stage, ms]) => (
          <>
            <dt>{stage}</dt>
            <dd>{ms.toFixed(1)} ms</dd>
          </>
        ))}
        <dt>model calls</dt>
        <dd>
          {usage.calls} ({usage.cache_hits} from cache)
        </dd>
        <dt>tokens</dt>
        <dd>
          {usage.input_tokens} in, {usage.output_tokens} out
        </dd>
        <dt>embedded texts</dt>
        <dd>{usage.embedded_texts}</dd>
      </dl>
      <p class="muted">
        Strategy <code>{output.strategy}</code> on index <code>{output.index}</code>.
      </p>
    </section>
  );
}
