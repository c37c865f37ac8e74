/**
 * The context the model saw: the numbered sources of an answer, exactly the text placed in
 * its context, cited ones marked, each opening to its passage, its messages, and its
 * document (`onOpen`: the passage viewer).
 */
import { canOpen, formatTime } from "./ask/logic";
import type { RAGOutput, Source } from "./types";

export function Sources({
  output,
  idPrefix = "",
  onOpen,
}: {
  output: RAGOutput;
  idPrefix?: string;
  onOpen?: (source: Source) => void;
}) {
  const { sources, cited } = output;
  if (sources.length === 0) return <p class="muted">No sources: the model saw no context.</p>;
  const citedSet = new Set(cited);
  const heading = `${idPrefix}sources-heading`;
  const tokens = output.metadata.context_tokens;
  return (
    <section aria-labelledby={heading} class="context">
      <h3 id={heading}>
        Context the model saw <span class="muted">({cited.length} of {sources.length} sources cited)</span>
      </h3>
      <p class="muted">
        These sources, in this order, are exactly the context the answer step was given
        {typeof tokens === "number" ? ` (${tokens} tokens)` : ""}.
      </p>
      <ol class="sources">
        {sources.map((source) => (
          <SourceItem
            key={source.n}
            id={`${idPrefix}source-${source.n}`}
            source={source}
            cited={citedSet.has(source.n)}
            onOpen={onOpen}
          />
        ))}
      </ol>
    </section>
  );
}

function SourceItem({
  id,
  source,
  cited,
  onOpen,
}: {
  id: string;
  source: Source;
  cited: boolean;
  onOpen?: (source: Source) => void;
}) {
  const name = source.title || source.path || source.kind;
  const messages = source.messages ?? [];
  return (
    <li id={id} class={cited ? "source cited" : "source"} value={source.n}>
      <details>
        <summary>
          <span class="source-n">[{source.n}]</span> {name}
          {source.path && source.path !== name ? <span class="muted"> — {source.path}</span> : null}
          {cited ? <span class="badge">cited</span> : <span class="badge quiet">not cited</span>}
        </summary>
        <p class="placed-label muted">Text placed in the context{source.truncated ? " (cut to fit)" : ""}:</p>
        <blockquote class="passage">{source.text}</blockquote>
        {onOpen && canOpen(source) ? (
          <button type="button" class="link open-passage" onClick={() => onOpen(source)}>
            Open [{source.n}] in its document
          </button>
        ) : null}
        {messages.length > 0 ? (
          <ul class="source-messages" aria-label={`Messages of source ${source.n}`}>
            {messages.map((m) => (
              <li>
                <span class="muted">[{m.label || source.n}]</span> <strong>{m.sender_name}</strong>{" "}
                <span class="muted">{formatTime(m.timestamp)} · {m.thread_name}</span>
              </li>
            ))}
          </ul>
        ) : null}
        <dl class="facts">
          {source.location ? (
            <>
              <dt>Path</dt>
              <dd>
                <code>{source.location}</code>
              </dd>
            </>
          ) : null}
          <dt>Kind</dt>
          <dd>{source.kind}</dd>
          {typeof source.start_char === "number" ? (
            <>
              <dt>Characters</dt>
              <dd>
                {source.start_char}–{source.end_char ?? "?"}
              </dd>
            </>
          ) : null}
          {typeof source.score === "number" ? (
            <>
              <dt>Score</dt>
              <dd>{source.score.toFixed(3)}</dd>
            </>
          ) : null}
        </dl>
      </details>
    </li>
  );
}
