/**
 * The Ask view's logic, free of the DOM (tested in logic.test.ts): the history a follow-up
 * sends, the states an answer is in, its evidence by thread-day, where a passage lies in its
 * document's text, the query options a person typed.
 */
import type { PriorTurn, QueryRequest } from "../api";
import type { DocumentText, MessageRef, RAGOutput, Source } from "../types";

/** One question of a conversation and where its answer stands. */
export type Run =
  | { state: "streaming"; text: string }
  | { state: "done"; output: RAGOutput }
  | { state: "failed"; error: unknown; text: string }
  | { state: "stopped"; text: string };

export interface Turn {
  /** Unique within the page: prefixes the ids of the turn's elements. */
  id: string;
  question: string;
  run: Run;
}

/** The most earlier turns a follow-up sends (the server keeps `query.memory.max_turns`). */
export const MAX_HISTORY = 20;

/**
 * The `history` of a follow-up: the finished turns before it, oldest first, each with the
 * answer shown. A failed or unfinished turn is left out (it has no answer to build on).
 */
export function buildHistory(turns: readonly Turn[]): PriorTurn[] {
  const out: PriorTurn[] = [];
  for (const turn of turns) {
    if (turn.run.state === "done") out.push({ question: turn.question, answer: turn.run.output.answer });
  }
  return out.slice(-MAX_HISTORY);
}

/** The question retrieval used when a follow-up was rewritten; null when it was the same. */
export function rewrittenQuestion(output: RAGOutput): string | null {
  const standalone = output.metadata.standalone_question;
  if (typeof standalone !== "string") return null;
  const text = standalone.trim();
  return text && text !== output.question.trim() ? text : null;
}

export type StateKind = "cannot_answer" | "cut" | "degraded" | "deadline" | "weak" | "invalid_citations";

/** One thing a reader must be told about an answer. */
export interface AnswerState {
  kind: StateKind;
  tone: "warn" | "info";
  text: string;
}

function entries(value: unknown): [string, string][] {
  if (!value || typeof value !== "object") return [];
  return Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, String(v)]);
}

/**
 * The states of a finished answer, in the order shown: cannot answer (`answer_kind`
 * `cannot_answer`, `metadata.cannot_answer` or `metadata.abstained`), a weak match, a
 * degraded section (`metadata.degraded`), the deadline hit, a cut answer (`answer_complete`
 * false or `finish_reason` `length`), citations of no source.
 */
export function answerStates(output: RAGOutput): AnswerState[] {
  const meta = output.metadata;
  const out: AnswerState[] = [];
  const reason = typeof meta.cannot_answer === "string" && meta.cannot_answer ? meta.cannot_answer : "";
  if (output.answer_kind === "cannot_answer" || reason || meta.abstained === true) {
    const what =
      output.answer_kind === "cannot_answer" || reason
        ? "Cannot answer from the sources"
        : "The model said the sources do not answer this";
    out.push({ kind: "cannot_answer", tone: "info", text: reason ? `${what}: ${reason}` : `${what}.` });
  }
  const match = meta.match;
  if (match && match.verdict === "weak") {
    out.push({
      kind: "weak",
      tone: "warn",
      text:
        `Weak match: the passages found may not answer this question ` +
        `(coverage ${match.coverage.toFixed(2)}, similarity ${match.similarity.toFixed(2)}).`,
    });
  }
  const degraded = entries(meta.degraded);
  if (degraded.length > 0) {
    out.push({
      kind: "degraded",
      tone: "warn",
      text:
        `Part of the search failed, so the answer rests on less: ` +
        degraded.map(([section, error]) => `${section} (${error})`).join("; ") +
        ".",
    });
  }
  if (meta.deadline_hit === true) {
    out.push({
      kind: "deadline",
      tone: "warn",
      text: "The query's deadline passed: the answer rests on what was found in time.",
    });
  }
  if (meta.answer_complete === false || meta.finish_reason === "length") {
    const why = meta.finish_reason === "length" ? "the model reached its length limit" : meta.finish_reason;
    out.push({ kind: "cut", tone: "warn", text: `The answer was cut${why ? ` (${why})` : ""}: it may stop mid-way.` });
  }
  if (meta.invalid_citations && meta.invalid_citations.length > 0) {
    out.push({
      kind: "invalid_citations",
      tone: "warn",
      text: `The answer cites labels that name no source: ${meta.invalid_citations.join(", ")}.`,
    });
  }
  return out;
}

/** `2018-05-04T14:03:09Z` → `2018-05-04 14:03 UTC`; "" stays "". */
export function formatTime(iso: string | undefined): string {
  if (!iso) return "";
  const match = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})/.exec(iso);
  return match ? `${match[1]} ${match[2]} UTC` : iso;
}

/**
 * A message's words without the head its transcript gives it (`[2018-05-16 18:05] Priya: `),
 * since the sender and time are shown beside it.
 */
export function messageBody(message: MessageRef): string {
  const text = message.text ?? "";
  const head = /^\[[^\]\n]*\] /.exec(text);
  if (!head) return text;
  const rest = text.slice(head[0].length);
  const sender = `${message.sender_name}: `;
  return rest.startsWith(sender) ? rest.slice(sender.length) : text;
}

/** The messages of one thread on one day (UTC) that an answer rests on. */
export interface EvidenceGroup {
  thread_id: string;
  thread_name: string;
  day: string;
  messages: MessageRef[];
}

/**
 * The answer's evidence by thread and day, groups and messages in time order. Without
 * `evidence` (an older server, or nothing cited), the messages of the cited sources.
 */
export function groupEvidence(output: RAGOutput): EvidenceGroup[] {
  let refs = output.evidence ?? [];
  if (refs.length === 0) {
    const cited = new Set(output.cited);
    refs = output.sources.filter((s) => cited.has(s.n)).flatMap((s) => s.messages ?? []);
  }
  const groups = new Map<string, EvidenceGroup>();
  const seen = new Set<string>();
  for (const ref of refs) {
    if (seen.has(ref.guid)) continue;
    seen.add(ref.guid);
    const day = (ref.timestamp ?? "").slice(0, 10);
    const key = JSON.stringify([ref.thread_id, day]);
    let group = groups.get(key);
    if (!group) {
      group = { thread_id: ref.thread_id, thread_name: ref.thread_name, day, messages: [] };
      groups.set(key, group);
    }
    group.messages.push(ref);
  }
  const byTime = (a: { timestamp?: string }, b: { timestamp?: string }) =>
    (a.timestamp ?? "").localeCompare(b.timestamp ?? "");
  const out = [...groups.values()];
  for (const group of out) group.messages.sort(byTime);
  out.sort((a, b) => a.day.localeCompare(b.day) || a.thread_name.localeCompare(b.thread_name));
  return out;
}

/** One run of a document's text as the passage viewer shows it. */
export interface TextPart {
  text: string;
  /** Inside the passage. */
  mark: boolean;
}

/**
 * A document window's text cut at the passage's bounds, so the passage can be highlighted;
 * a gap between two segments (text no unit kept) shows as a line break. Adjacent parts of
 * the same kind are merged.
 */
export function passageParts(doc: DocumentText): TextPart[] {
  const parts: TextPart[] = [];
  const push = (text: string, mark: boolean) => {
    if (!text) return;
    const last = parts[parts.length - 1];
    if (last && last.mark === mark) last.text += text;
    else parts.push({ text, mark });
  };
  const start = doc.passage_start;
  const end = doc.passage_end;
  let at: number | null = null;
  for (const seg of doc.segments) {
    if (at !== null && seg.start_char > at) {
      const inGap = start !== null && end !== null && at >= start && seg.start_char <= end;
      push("\n", inGap);
    }
    if (start === null || end === null || seg.end_char <= start || seg.start_char >= end) {
      push(seg.text, false);
    } else {
      const a = Math.max(start - seg.start_char, 0);
      const b = Math.min(end - seg.start_char, seg.text.length);
      push(seg.text.slice(0, a), false);
      push(seg.text.slice(a, b), true);
      push(seg.text.slice(b), false);
    }
    at = seg.end_char;
  }
  return parts;
}

/** The query parameters of `GET /v1/documents/{id}/text` that locate a source's passage. */
export function passageQuery(source: Source): Record<string, string | number | undefined> {
  if (typeof source.start_char === "number") {
    return {
      start_char: source.start_char,
      end_char: typeof source.end_char === "number" ? source.end_char : source.start_char + source.text.length,
    };
  }
  return {};
}

/** Whether a source can be opened in its document (a passage of a stored document). */
export function canOpen(source: Source): boolean {
  return Boolean(source.document_id) && source.kind === "text_unit";
}

/** The methodologies that build a graph the Graph view can draw. */
export const GRAPH_METHODOLOGIES = ["graphrag", "lightrag", "hipporag", "lazy"];

/** Whether an index with these methodologies has a graph ("Show in graph" is offered). */
export function hasGraph(methodologies: readonly string[]): boolean {
  return methodologies.some((m) => GRAPH_METHODOLOGIES.includes(m));
}

/** The query options as typed: "" is the index's default. */
export interface OptionsForm {
  top_k: string;
  mode: "" | "hybrid" | "lexical" | "vector";
  max_context_tokens: string;
  deadline_s: string;
  answer_style: "" | "auto" | "concise" | "comprehensive";
}

export const NO_OPTIONS: OptionsForm = { top_k: "", mode: "", max_context_tokens: "", deadline_s: "", answer_style: "" };

type Options = Pick<QueryRequest, "top_k" | "mode" | "max_context_tokens" | "deadline_s" | "answer_style">;

/**
 * The request fields of the options set, or the first one that is not valid:
 * `top_k` an integer ≥ 1, `max_context_tokens` an integer ≥ 64, `deadline_s` a number > 0.
 */
export function parseOptions(form: OptionsForm): { ok: true; value: Options } | { ok: false; field: keyof OptionsForm; message: string } {
  const value: Options = {};
  const integer = (text: string, min: number): number | null => {
    const n = Number(text);
    return /^\s*\d+\s*$/.test(text) && n >= min ? n : null;
  };
  if (form.top_k.trim()) {
    const n = integer(form.top_k, 1);
    if (n === null) return { ok: false, field: "top_k", message: "Sources per type must be a whole number, 1 or more." };
    value.top_k = n;
  }
  if (form.max_context_tokens.trim()) {
    const n = integer(form.max_context_tokens, 64);
    if (n === null) {
      return { ok: false, field: "max_context_tokens", message: "The context budget must be a whole number of tokens, 64 or more." };
    }
    value.max_context_tokens = n;
  }
  if (form.deadline_s.trim()) {
    const n = Number(form.deadline_s);
    if (!Number.isFinite(n) || n <= 0) return { ok: false, field: "deadline_s", message: "The deadline must be a number of seconds above 0." };
    value.deadline_s = n;
  }
  if (form.mode) value.mode = form.mode;
  if (form.answer_style) value.answer_style = form.answer_style;
  return { ok: true, value };
}
