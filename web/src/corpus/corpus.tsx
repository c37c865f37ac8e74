/** The Corpus view: the documents of an index, uploads and their jobs, deletion, drift. */
import type { ViewProps } from "../view";

export function Corpus(_props: ViewProps) {
  return <p class="muted">The Corpus view is being built.</p>;
}
