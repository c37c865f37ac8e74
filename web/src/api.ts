/**
 * The client of the HTTP API: the only way this app reaches the product (DESIGN.md §3).
 *
 * The API key, when the server asks for one, is kept in `sessionStorage`: it lives as long as
 * the browser tab and is never written to `localStorage` or a cookie.
 */
import { readEvents } from "./sse";
import type { ErrorBody, IndexCatalog, RAGOutput } from "./types";

const KEY_ITEM = "ukr.apiKey";

/** An error the server answered: its HTTP status and the typed error of its body. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly field: string | null = null,
  ) {
    super(message);
  }
}

/** The server could not be reached (not running, wrong address, network down). */
export class UnreachableError extends Error {}

/** A key `fetch` can send in a header: printable ASCII, no spaces (what `ukr keys add` makes). */
export function isSendableKey(key: string): boolean {
  return /^[\x21-\x7e]+$/.test(key);
}

export function apiKey(): string | null {
  try {
    const key = sessionStorage.getItem(KEY_ITEM);
    if (key !== null && !isSendableKey(key)) {
      sessionStorage.removeItem(KEY_ITEM); // fetch would refuse every request: ask again
      return null;
    }
    return key;
  } catch {
    return null; // storage disabled: the key is asked again
  }
}

export function setApiKey(key: string | null): void {
  try {
    if (key) sessionStorage.setItem(KEY_ITEM, key);
    else sessionStorage.removeItem(KEY_ITEM);
  } catch {
    /* storage disabled */
  }
}

/** The request headers: what the reply should be, and the API key when one is kept. */
export function headers(json: boolean): Record<string, string> {
  const out: Record<string, string> = { Accept: json ? "application/json" : "text/event-stream" };
  const key = apiKey();
  if (key) out["Authorization"] = `Bearer ${key}`;
  return out;
}

/** `fetch` that throws `UnreachableError` for no reply and `ApiError` for an error reply. */
export async function send(path: string, init: RequestInit): Promise<Response> {
  let response: Response;
  try {
    response = await fetch(path, init);
  } catch (exc) {
    if (exc instanceof DOMException && exc.name === "AbortError") throw exc;
    throw new UnreachableError(`cannot reach the server at ${location.origin}`);
  }
  if (!response.ok) throw await errorOf(response);
  return response;
}

async function errorOf(response: Response): Promise<ApiError> {
  try {
    const body = (await response.json()) as Partial<ErrorBody>;
    if (body.error && typeof body.error.message === "string") {
      return new ApiError(response.status, body.error.type, body.error.message, body.error.field ?? null);
    }
  } catch {
    /* not JSON: a proxy's page */
  }
  return new ApiError(response.status, "HTTPError", `${response.status} ${response.statusText}`.trim());
}

/** `GET /v1/version`: the server's package version (no key needed). */
export async function serverVersion(signal?: AbortSignal): Promise<string> {
  const response = await send("/v1/version", { headers: headers(true), signal });
  return ((await response.json()) as { version: string }).version;
}

/** `GET /v1/indexes`: every index and the strategies it serves. */
export async function listIndexes(signal?: AbortSignal): Promise<IndexCatalog[]> {
  const response = await send("/v1/indexes", { headers: headers(true), signal });
  return (await response.json()) as IndexCatalog[];
}

/** One earlier turn of a conversation the app keeps (`history` of `POST /v1/query`). */
export interface PriorTurn {
  question: string;
  answer: string;
}

/** The body of `POST /v1/query` (docs/reference/openapi.json `QueryRequest`). */
export interface QueryRequest {
  question: string;
  index: string;
  strategy: string;
  history?: PriorTurn[];
  top_k?: number;
  mode?: "hybrid" | "lexical" | "vector";
  deadline_s?: number;
  max_context_tokens?: number;
  answer_style?: "auto" | "concise" | "comprehensive";
}

/** What a streamed query sends: the answer's text as it is written, then the whole output. */
export type QueryEvent =
  | { kind: "delta"; text: string }
  | { kind: "result"; output: RAGOutput }
  | { kind: "error"; type: string; message: string };

/** `POST /v1/query` with `stream: true`; yields its events until the result or an error. */
export async function* streamQuery(request: QueryRequest, signal: AbortSignal): AsyncGenerator<QueryEvent> {
  const response = await send("/v1/query", {
    method: "POST",
    headers: { ...headers(false), "Content-Type": "application/json" },
    body: JSON.stringify({ ...request, stream: true }),
    signal,
  });
  if (!response.body) throw new ApiError(response.status, "HTTPError", "the reply has no body");
  for await (const event of readEvents(response.body)) {
    const data = JSON.parse(event.data) as Record<string, unknown>;
    if (event.event === "delta") yield { kind: "delta", text: String(data["text"] ?? "") };
    else if (event.event === "result") yield { kind: "result", output: data as unknown as RAGOutput };
    else if (event.event === "error") {
      yield { kind: "error", type: String(data["type"] ?? "Error"), message: String(data["message"] ?? "") };
    }
  }
}

/** `GET path?params` answered with JSON (parameters that are undefined are left out). */
export async function getJson<T>(
  path: string,
  params: Record<string, string | number | boolean | undefined> = {},
  signal?: AbortSignal,
): Promise<T> {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) query.set(name, String(value));
  const text = query.toString();
  const response = await send(text ? `${path}?${text}` : path, { headers: headers(true), signal });
  return (await response.json()) as T;
}

/** `METHOD path` with a JSON body, answered with JSON. */
export async function sendJson<T>(method: string, path: string, body: unknown, signal?: AbortSignal): Promise<T> {
  const response = await send(path, {
    method,
    headers: { ...headers(true), "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  return (await response.json()) as T;
}
