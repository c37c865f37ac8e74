/**
 * The Ask view: pick an index and a strategy, ask, read the answer as it streams, check its
 * context; ask follow-ups (the earlier turns go as `history`); open a passage in its document
 * or a message in its thread-day.
 */
import { useEffect, useState } from "preact/hooks";
import { listIndexes, streamQuery } from "./api";
import { AnswerText, Costs, Notices } from "./answer";
import "./ask/ask.css";
import { buildHistory, hasGraph, NO_OPTIONS, parseOptions, rewrittenQuestion, type OptionsForm, type Run, type Turn } from "./ask/logic";
import { QueryOptions } from "./ask/options";
import { Evidence, Viewer, type Viewing } from "./ask/viewers";
import { showInGraph } from "./nav";
import { isUnauthorized, Problem } from "./problem";
import { Sources } from "./sources";
import type { IndexCatalog, MessageRef, Source, StrategyInfo } from "./types";
import type { ViewProps } from "./view";

type Catalogs =
  | { state: "loading" }
  | { state: "ready"; list: IndexCatalog[] }
  | { state: "failed"; error: unknown };

const PREFERRED = ["auto", "naive"];

function defaultStrategy(catalog: IndexCatalog | undefined): string {
  const served = catalog?.strategies.filter((s) => s.served).map((s) => s.name) ?? [];
  return PREFERRED.find((name) => served.includes(name)) ?? served[0] ?? "";
}

let turnCounter = 0;

/**
 * What the view shows, kept while another view is shown (the tabs unmount the view): the
 * choices, the draft question, and the conversation. An answer still streaming goes on
 * streaming into `kept.turns` and shows again when the view comes back.
 */
const kept: { index: string; strategy: string; options: OptionsForm; question: string; turns: Turn[] } = {
  index: "",
  strategy: "",
  options: NO_OPTIONS,
  question: "",
  turns: [],
};

/** The stream in flight (Stop aborts it) and the mounted view's setter of its turns. */
const live: { abort: AbortController | null; show: ((turns: Turn[]) => void) | null } = { abort: null, show: null };

/** Change the conversation, mounted or not. */
function setTurns(change: (turns: Turn[]) => Turn[]): void {
  kept.turns = change(kept.turns);
  live.show?.(kept.turns);
}

export function Ask({ keyVersion, onUnauthorized }: ViewProps) {
  const [catalogs, setCatalogs] = useState<Catalogs>({ state: "loading" });
  const [index, setIndex] = useState(kept.index);
  const [strategy, setStrategy] = useState(kept.strategy);
  const [question, setQuestion] = useState(kept.question);
  const [options, setOptions] = useState<OptionsForm>(kept.options);
  const [turns, showTurns] = useState<Turn[]>(kept.turns);
  const [viewing, setViewing] = useState<Viewing | null>(null);

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

  useEffect(() => {
    live.show = showTurns;
    showTurns(kept.turns); // what streamed while another view was shown
    return () => {
      if (live.show === showTurns) live.show = null;
    };
  }, []);
  useEffect(() => {
    Object.assign(kept, { index, strategy, options, question });
  }, [index, strategy, options, question]);

  const catalog = catalogs.state === "ready" ? catalogs.list.find((c) => c.index === index) : undefined;
  const chosen = catalog?.strategies.find((s) => s.name === strategy);
  const streaming = turns.some((t) => t.run.state === "streaming");
  const parsed = parseOptions(options);
  const canAsk = !streaming && question.trim() !== "" && chosen?.served === true && parsed.ok;
  const graph = hasGraph(catalog?.methodologies ?? []);
  const followUp = turns.some((t) => t.run.state === "done");

  const update = (id: string, run: Run) => setTurns((all) => all.map((t) => (t.id === id ? { ...t, run } : t)));

  const newConversation = () => {
    live.abort?.abort();
    setTurns(() => []);
    setQuestion("");
    document.getElementById("question")?.focus();
  };

  const ask = async (event?: Event) => {
    event?.preventDefault();
    if (!canAsk || !parsed.ok) return;
    const controller = new AbortController();
    live.abort = controller;
    const asked = question.trim();
    const id = `t${++turnCounter}-`;
    const history = buildHistory(turns);
    let text = "";
    setTurns((all) => [...all, { id, question: asked, run: { state: "streaming", text } }]);
    setQuestion("");
    try {
      const request = { question: asked, index, strategy, ...parsed.value, ...(history.length ? { history } : {}) };
      for await (const ev of streamQuery(request, controller.signal)) {
        if (ev.kind === "delta") {
          text += ev.text;
          update(id, { state: "streaming", text });
        } else if (ev.kind === "result") {
          update(id, { state: "done", output: ev.output });
          return;
        } else {
          update(id, { state: "failed", error: new Error(`${ev.type}: ${ev.message}`), text });
          return;
        }
      }
      update(id, { state: "failed", error: new Error("the answer stream ended before its result"), text });
    } catch (error) {
      if (controller.signal.aborted) {
        update(id, { state: "stopped", text });
        return;
      }
      if (isUnauthorized(error)) onUnauthorized();
      update(id, { state: "failed", error, text });
    } finally {
      if (live.abort === controller) live.abort = null;
    }
  };

  return (
    <div class="ask">
      <form class="ask-form" onSubmit={ask} aria-label="Ask a question">
        {catalogs.state === "loading" ? <p class="muted">Loading the indexes…</p> : null}
        {catalogs.state === "failed" ? <Problem error={catalogs.error} context="Listing the indexes" /> : null}
        {catalogs.state === "ready" && catalogs.list.length === 0 ? (
          <p class="problem">
            No index yet: add documents in the <a href="#corpus">Corpus</a> view, or run <code>ukr index PATH</code> on the
            server.
          </p>
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
                  if (next !== index) newConversation(); // a conversation is over one index
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
        <QueryOptions value={options} onChange={setOptions} problem={parsed.ok ? null : parsed} />
        <div class="field">
          <label for="question">{followUp ? "Follow-up question" : "Question"}</label>
          <textarea
            id="question"
            rows={3}
            value={question}
            aria-describedby="question-hint"
            onInput={(e) => setQuestion(e.currentTarget.value)}
            onKeyDown={(e) => {
              if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) void ask(e);
            }}
          />
          <p id="question-hint" class="muted">
            Ctrl+Enter asks.
            {followUp ? " A follow-up is read with the questions and answers above it." : ""}
          </p>
        </div>
        <div class="actions">
          <button type="submit" disabled={!canAsk}>
            Ask
          </button>
          {streaming ? (
            <button type="button" onClick={() => live.abort?.abort()}>
              Stop
            </button>
          ) : null}
          {turns.length > 0 ? (
            <button type="button" onClick={newConversation}>
              New conversation
            </button>
          ) : null}
        </div>
      </form>
      {turns.length > 0 ? (
        <ol class="turns" aria-label="Conversation">
          {turns.map((turn, i) => (
            <TurnView
              key={turn.id}
              turn={turn}
              number={i + 1}
              graph={graph}
              onView={(v) => setViewing({ ...v, index })}
            />
          ))}
        </ol>
      ) : null}
      {viewing ? <Viewer viewing={viewing} onClose={() => setViewing(null)} onUnauthorized={onUnauthorized} /> : null}
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

type ViewRequest = { kind: "passage"; source: Source } | { kind: "thread"; message: MessageRef };

function TurnView({
  turn,
  number,
  graph,
  onView,
}: {
  turn: Turn;
  number: number;
  graph: boolean;
  onView: (request: ViewRequest) => void;
}) {
  const { run, id } = turn;
  const text = run.state === "done" ? run.output.answer : run.text;
  const numbers = new Set(run.state === "done" ? run.output.sources.map((s) => s.n) : []);
  const heading = `${id}question`;
  const rewritten = run.state === "done" ? rewrittenQuestion(run.output) : null;
  return (
    <li class="turn result" aria-labelledby={heading} aria-busy={run.state === "streaming"} data-state={run.state}>
      <h2 id={heading} class="turn-question">
        <span class="muted">Q{number}.</span> {turn.question}
      </h2>
      {rewritten ? (
        <p class="rewritten muted">
          Searched as: <q>{rewritten}</q>
        </p>
      ) : null}
      {run.state === "streaming" && text === "" ? <p class="muted">Retrieving…</p> : null}
      <div aria-live="polite" data-state={run.state} class="answer">
        {text ? <AnswerText text={text} sourceNumbers={numbers} idPrefix={id} /> : null}
      </div>
      {run.state === "failed" ? <Problem error={run.error} context="Asking" /> : null}
      {run.state === "stopped" ? (
        <p class="muted" role="status">
          Stopped: the query was cancelled{text ? "; the answer above is unfinished" : ""}.
        </p>
      ) : null}
      {run.state === "done" ? (
        <>
          <Notices output={run.output} />
          {graph ? (
            <p>
              <button type="button" class="link" onClick={() => showInGraph(run.output)}>
                Show in graph
              </button>
            </p>
          ) : null}
          <Evidence output={run.output} idPrefix={id} onThread={(message) => onView({ kind: "thread", message })} />
          <Sources output={run.output} idPrefix={id} onOpen={(source) => onView({ kind: "passage", source })} />
          <Costs output={run.output} idPrefix={id} />
        </>
      ) : null}
    </li>
  );
}
