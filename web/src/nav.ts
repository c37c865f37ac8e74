/**
 * Which view is shown, kept in the page's hash (`#ask`, `#corpus`, `#graph?label=Owls`), so the
 * back button and a shared link work; and the hand-off of an answer from Ask to Graph
 * ("show in graph" draws the answer's query trace).
 */
import { useEffect, useState } from "preact/hooks";
import type { RAGOutput } from "./types";

export const VIEWS = ["ask", "corpus", "graph"] as const;
export type View = (typeof VIEWS)[number];

export interface Route {
  view: View;
  params: URLSearchParams;
}

/** The route the hash names; `ask` for an empty or unknown hash. */
export function parseRoute(hash: string): Route {
  const text = hash.replace(/^#/, "");
  const cut = text.indexOf("?");
  const name = cut < 0 ? text : text.slice(0, cut);
  const params = new URLSearchParams(cut < 0 ? "" : text.slice(cut + 1));
  const view = (VIEWS as readonly string[]).includes(name) ? (name as View) : "ask";
  return { view, params };
}

/** The hash of a route: `#graph?label=Owls`. */
export function routeHash(view: View, params?: Record<string, string>): string {
  const query = params ? new URLSearchParams(params).toString() : "";
  return `#${view}${query ? `?${query}` : ""}`;
}

/** Show a view (a new history entry). */
export function go(view: View, params?: Record<string, string>): void {
  location.hash = routeHash(view, params);
}

/** The current route, updated on every hash change. */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const changed = () => setRoute(parseRoute(location.hash));
    addEventListener("hashchange", changed);
    return () => removeEventListener("hashchange", changed);
  }, []);
  return route;
}

let pendingTrace: RAGOutput | null = null;

/** Open the Graph view on the query trace of `output` (its context's nodes, highlighted). */
export function showInGraph(output: RAGOutput): void {
  pendingTrace = output;
  go("graph", { index: output.index, trace: "1" });
}

/** The answer handed over by `showInGraph`, once; null when none is waiting. */
export function takeTrace(): RAGOutput | null {
  const out = pendingTrace;
  pendingTrace = null;
  return out;
}
