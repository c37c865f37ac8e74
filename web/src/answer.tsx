/** An answer: its text with citation links, what a reader must be told about it, and its cost. */
import { answerStates } from "./ask/logic";
import type { RAGOutput } from "./types";

const CITATION = /\[(\d+)(?:\.\d+)?\]/g;

/**
 * The answer's text, each `[n]` a link to source n of this turn (`{idPrefix}source-{n}`);
 * every part is a text node (escaped).
 */
export function AnswerText({
  text,
  sourceNumbers,
  idPrefix = "",
}: {
  text: string;
  sourceNumbers: Set<number>;
  idPrefix?: string;
}) {
  const parts: (string | preact.JSX.Element)[] = [];
  let last = 0;
  for (const match of text.matchAll(CITATION)) {
    const n = Number(match[1]);
    if (!sourceNumbers.has(n)) continue;
    parts.push(text.slice(last, match.index));
    const id = `${idPrefix}source-${n}`;
    parts.push(
      <a href={`#${id}`} class="citation" onClick={(e) => openSource(e, id)} aria-label={`source ${n}`}>
        {match[0]}
      </a>,
    );
    last = match.index + match[0].length;
  }
  parts.push(text.slice(last));
  return <p class="answer-text">{parts}</p>;
}

function openSource(event: MouseEvent, id: string): void {
  const details = document.getElementById(id)?.querySelector<HTMLDetailsElement>("details");
  if (!details) return;
  event.preventDefault(); // the hash names the view (nav.ts): never a source
  details.open = true;
  details.querySelector("summary")?.focus();
}

/** One line per thing to flag (`answerStates`): cannot answer, a weak match, a degraded
 * section, the deadline, a cut answer, citations of no source. */
export function Notices({ output }: { output: RAGOutput }) {
  const states = answerStates(output);
  if (states.length === 0) return null;
  return (
    <ul class="notices" aria-label="About this answer">
      {states.map((state) => (
        <li class={`notice ${state.tone}`} data-kind={state.kind} role={state.tone === "warn" ? "alert" : undefined}>
          {state.text}
        </li>
      ))}
    </ul>
  );
}

/** Where the time went (`timings_ms`), what the query used (`usage`) and how it ran. */
export function Costs({ output, idPrefix = "" }: { output: RAGOutput; idPrefix?: string }) {
  const { usage, timings_ms: timings, metadata } = output;
  const heading = `${idPrefix}costs-heading`;
  return (
    <section aria-labelledby={heading} class="costs">
      <h3 id={heading}>Timings and usage</h3>
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
        <dt>waiting on models</dt>
        <dd>{(usage.latency_s * 1000).toFixed(1)} ms</dd>
        <dt>embedded texts</dt>
        <dd>{usage.embedded_texts}</dd>
        {typeof metadata.context_tokens === "number" ? (
          <>
            <dt>context</dt>
            <dd>{metadata.context_tokens} tokens</dd>
          </>
        ) : null}
        {metadata.answer_style ? (
          <>
            <dt>answer style</dt>
            <dd>{metadata.answer_style}</dd>
          </>
        ) : null}
      </dl>
      <p class="muted">
        Strategy <code>{output.strategy}</code> ({output.answer_kind} answer) on index <code>{output.index}</code>.
      </p>
    </section>
  );
}
