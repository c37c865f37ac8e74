/** The shapes of the HTTP API this app reads (docs/guides/service.md); only the fields it uses. */

export interface StrategyInfo {
  name: string;
  description: string;
  methodologies: string[];
  served: boolean;
  missing: string[];
  how: string;
}

/** One index as `GET /v1/indexes` lists it. */
export interface IndexCatalog {
  index: string;
  methodologies: string[];
  text_units: number;
  note: string;
  strategies: StrategyInfo[];
}

/** One message of a message archive, as a source or an answer's evidence names it. */
export interface MessageRef {
  guid: string;
  thread_id: string;
  thread_name: string;
  sender_name: string;
  sender_handle?: string;
  is_from_me?: boolean;
  /** ISO 8601 UTC, "" when unknown. */
  timestamp?: string;
  text?: string;
  /** Its citation label, `3.2`: message 2 of source 3. */
  label?: string;
  edited?: boolean;
}

/** One numbered source of an answer: exactly the text placed in the model's context. */
export interface Source {
  n: number;
  kind: string;
  id?: string;
  text: string;
  document_id?: string | null;
  path?: string | null;
  location?: string | null;
  title?: string | null;
  text_unit_ids?: string[];
  start_char?: number | null;
  end_char?: number | null;
  score?: number | null;
  truncated?: boolean;
  document_ids?: string[];
  messages?: MessageRef[];
}

export interface Usage {
  calls: number;
  cache_hits: number;
  input_tokens: number;
  output_tokens: number;
  embedded_texts: number;
  latency_s: number;
}

export interface MatchVerdict {
  verdict: "strong" | "weak";
  coverage: number;
  similarity: number;
}

export interface AnswerMetadata {
  match?: MatchVerdict;
  deadline_hit?: boolean;
  answer_complete?: boolean;
  finish_reason?: string | null;
  invalid_citations?: string[];
  cannot_answer?: string;
  abstained?: boolean;
  degraded?: Record<string, string>;
  incomplete_replies?: Record<string, string>;
  context_tokens?: number;
  standalone_question?: string;
  rewrite?: string;
  answer_style?: string;
  [key: string]: unknown;
}

/** A `RAGOutput`: what `POST /v1/query` answers (the `result` event when streaming). */
export interface RAGOutput {
  question: string;
  answer: string;
  answer_kind: string;
  strategy: string;
  index: string;
  sources: Source[];
  cited: number[];
  usage: Usage;
  timings_ms: Record<string, number>;
  metadata: AnswerMetadata;
  /** Over a message archive: the messages the answer rests on. */
  evidence?: MessageRef[];
}

/** One stretch of a document's text (a text unit less its overlap with the one before). */
export interface DocumentSegment {
  text_unit_id: string;
  start_char: number;
  end_char: number;
  text: string;
}

/** `GET /v1/documents/{id}/text`: a window of a document's text around a passage. */
export interface DocumentText {
  document_id: string;
  path: string;
  source_scope: string;
  title?: string | null;
  text_units: number;
  first_unit: number;
  segments: DocumentSegment[];
  passage_start: number | null;
  passage_end: number | null;
  more_before: boolean;
  more_after: boolean;
}

/** `GET /v1/messages/thread-day`: the messages of a thread on one day (or day span). */
export interface ThreadDay {
  document_id: string;
  doc_key: string;
  thread_id: string;
  thread_name: string;
  span: string;
  messages: MessageRef[];
  focus: string | null;
  days: { span: string; document_id: string }[];
}

/** The body of every error the API answers. */
export interface ErrorBody {
  error: { type: string; message: string; field?: string | null };
}
