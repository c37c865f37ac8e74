/** The Ask view: pick an index and a strategy, ask, read the answer as it streams, check sources. */
import { useEffect, useRef, useState } from "preact/hooks";
import { listIndexes, streamQuery } from "./api";
import { AnswerText, Costs, Notices } from "./answer";
import { isUnauthorized, Problem } from "./problem";
import { Sources } from "./sources";
import type { IndexCatalog, RAGOutput, StrategyInfo } from "./types";
import type { ViewProps } from "./view";

type Catalogs =
  | { state: "loading" }
  | { state: "ready"; list: IndexCatalog[] }
  | { state: "failed"; error: unknown };

type Run =
  | { state: "idle" }
  | { state: "streaming"; text: string }
  | { state: "done"; output: RAGOutput }
  | { state: "failed"; error: unknown; text: string };

const PREFERRED = ["auto", "naive"];

function defaultStrategy(catalog: IndexCatalog | undefined): string {
  const served = catalog?.strategies.filter((s) => s.served).map((s) => s.name) ?? [];
  return PREFERRED.find((name) => served.includes(name)) ?? served[0] ?? "";
}

export function Ask({ keyVersion, onUnauthorized }: ViewProps) {
  const [catalogs, setCatalogs] = useState<Catalogs>({ state: "loading" });
  const [index, setIndex] = useState("");
  const [strategy, setStrategy] = useState("");
  const [question, setQuestion] = useState("");
  const [run, setRun] = useState<Run>({ state: "idle" });
  const abort = useRef<AbortController | null>(null);

  useEffect(() => {
    const controller = new AbortController();
    setCatalogs({ state: "loading" });
    listIndexes(controller.signal).then(
      (list) => {
        setCatalogs({ state: "ready", list });
        const first = list[0];
        setIndex((current) => (list.some((c) => c.index === current) ? current : (first?.index ?? "")));
        setStrategy((current) => current || defaultStrategy(first));
      },
      (error: unknown) => {
        if (controller.signal.aborted) return;
        if (isUnauthorized(error)) onUnauthorized();
        setCatalogs({ state: "failed", error });
      },
    );
    return () => controller.abort();
  }, [keyVersion]);

  useEffect(() => () => abort.current?.abort(), []);

  const catalog = catalogs.state === "ready" ? catalogs.list.find((c) => c.index === index) : undefined;
  const chosen = catalog?.strategies.find((s) => s.name === strategy);
  const streaming = run.state === "streaming";
  const canAsk = !streaming && question.trim() !== "" && chosen?.served === true;

  const ask = async (event?: Event) => {
    event?.preventDefault();
    if (!canAsk) return;
    const controller = new AbortController();
    abort.current = controller;
    let text = "";
    setRun({ state: "streaming", text });
    try {
      for await (const ev of streamQuery({ question: question.trim(), index, strategy }, controller.signal)) {
        if (ev.kind === "delta") {
          text += ev.text;
          setRun({ state: "streaming", text });
        } else if (ev.kind === "result") {
          setRun({ state: "done", output: ev.output });
          return;
        } else {
          setRun({ state: "failed", error: new Error(`${ev.type}: ${ev.message}`), text });
          return;
        }
      }
      setRun({ state: "failed", error: new Error("the answer stream ended before its result"), text });
    } catch (error) {
      if (controller.signal.aborted) {
        setRun({ state: "failed", error: new Error("stopped"), text });
        return;
      }
      if (isUnauthorized(error)) onUnauthorized();
      setRun({ state: "failed", error, text });
    } finally {
      abort.current = null;
    }
  };

  return (
    <div class="ask">
      <form class="ask-form" onSubmit={ask} aria-label="Ask a question">
        {catalogs.state === "loading" ? <p class="muted">Loading the indexes…</p> : null}
        {catalogs.state === "failed" ? <Problem error={catalogs.error} context="Listing the indexes" /> : null}
        {catalogs.state === "ready" && catalogs.list.length === 0 ? (
          <p class="problem">No index yet: index documents first (`ukr index PATH`).</p>
        ) : null}
        {catalogs.state === "ready" && catalogs.list.length > 0 ? (
          <>
            <div class="field">
              <label for="index-picker">Index</label>
              <select
                id="index-picker"
                value={index}
                onChange={(e) => {
                  const next = e.currentTarget.value;
                  setIndex(next);
                  setStrategy(defaultStrategy(catalogs.list.find((c) => c.index === next)));
                }}
              >
                {catalogs.list.map((c) => (
                  <option value={c.index}>
                    {c.index} ({c.text_units} text units)
                  </option>
                ))}
              </select>
              {catalog?.note ? <p class="muted">{catalog.note}</p> : null}
            </div>
            <StrategyPicker strategies={catalog?.strategies ?? []} value={strategy} onChange={setStrategy} />
          </>
        ) : null}
        <div class="field">
          <label for="question">Question</label>
          <textarea
            id="question"
            rows={3}
            value={question}
            maxLength={20000}
            aria-describedby="question-hint"
            onInput={(e) => setQuestion(e.currentTarget.value)}
            onKeyDown={(e) => {
              if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) void ask(e);
            }}
          />
          <p id="question-hint" class="muted">
            Ctrl+Enter asks.
          </p>
        </div>
        <div class="actions">
          <button type="submit" disabled={!canAsk}>
            Ask
          </button>
          {streaming ? (
            <button type="button" onClick={() => abort.current?.abort()}>
              Stop
            </button>
          ) : null}
        </div>
      </form>
      <Result run={run} />
    </div>
  );
}

function StrategyPicker(props: { strategies: StrategyInfo[]; value: string; onChange: (name: string) => void }) {
  return (
    <fieldset class="strategies">
      <legend>Strategy</legend>
      {props.strategies.map((s) => {
        const id = `strategy-${s.name}`;
        const how = s.served ? "" : s.how || `needs ${s.missing.join(" or ")}`;
        return (
          <div class={s.served ? "strategy" : "strategy unserved"}>
            <input
              type="radio"
              name="strategy"
              id={id}
              value={s.name}
              checked={props.value === s.name}
              disabled={!s.served}
              aria-describedby={`${id}-desc`}
              onChange={() => props.onChange(s.name)}
            />
            <label for={id}>{s.name}</label>
            <p id={`${id}-desc`} class="description">
              {s.description}
              {how ? <span class="reason"> Not served by this index.</span> : null}
            </p>
            {how ? (
              <details class="how">
                <summary>How to serve {s.name}</summary>
                <p>{how}</p>
              </details>
            ) : null}
          </div>
        );
      })}
    </fieldset>
  );
}

function Result({ run }: { run: Run }) {
  if (run.state === "idle") return null;
  const text = run.state === "done" ? run.output.answer : run.text;
  const numbers = new Set(run.state === "done" ? run.output.sources.map((s) => s.n) : []);
  return (
    <section class="result" aria-labelledby="answer-heading" aria-busy={run.state === "streaming"}>
      <h2 id="answer-heading">Answer</h2>
      {run.state === "streaming" && text === "" ? <p class="muted">Retrieving…</p> : null}
      <div aria-live="polite" data-state={run.state} class="answer">
        {text ? <AnswerText text={text} sourceNumbers={numbers} /> : null}
      </div>
      {run.state === "failed" ? <Problem error={run.error} context="Asking" /> : null}
      {run.state === "done" ? (
        <>
          <Notices output={run.output} />
          <Sources sources={run.output.sources} cited={run.output.cited} />
          <Costs output={run.output} />
        </>
      ) : null}
    </section>
  );
}
