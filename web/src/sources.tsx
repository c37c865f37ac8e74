/** The numbered sources of an answer: cited ones marked, each opening to its passage and path. */
import type { Source } from "./types";

export function Sources({ sources, cited }: { sources: Source[]; cited: number[] }) {
  if (sources.length === 0) return <p class="muted">No sources.</p>;
  const citedSet = new Set(cited);
  return (
    <section aria-labelledby="sources-heading">
      <h3 id="sources-heading">
        Sources <span class="muted">({cited.length} of {sources.length} cited)</span>
      </h3>
      <ol class="sources">
        {sources.map((source) => (
          <SourceItem key={source.n} source={source} cited={citedSet.has(source.n)} />
        ))}
      </ol>
    </section>
  );
}

function SourceItem({ source, cited }: { source: Source; cited: boolean }) {
  const name = source.title || source.path || source.kind;
  return (
    <li id={`source-${source.n}`} class={cited ? "source cited" : "source"} value={source.n}>
      <details>
        <summary>
          <span class="source-n">[{source.n}]</span> {name}
          {source.path && source.path !== name ? <span class="muted"> — {source.path}</span> : null}
          {cited ? <span class="badge">cited</span> : <span class="badge quiet">not cited</span>}
        </summary>
        <blockquote class="passage">{source.text}</blockquote>
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
          {typeof source.score === "number" ? (
            <>
              <dt>Score</dt>
              <dd>{source.score.toFixed(3)}</dd>
            </>
          ) : null}
          {source.truncated ? (
            <>
              <dt>Note</dt>
              <dd>the passage was cut to fit the context</dd>
            </>
          ) : null}
        </dl>
      </details>
    </li>
  );
}
