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

/** One numbered source of an answer. */
export interface Source {
  n: number;
  kind: string;
  text: string;
  path?: string | null;
  location?: string | null;
  title?: string | null;
  score?: number | null;
  truncated?: boolean;
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
}

/** The body of every error the API answers. */
export interface ErrorBody {
  error: { type: string; message: string; field?: string | null };
}
