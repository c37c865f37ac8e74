/** What every view is given by the page. */
import type { Route } from "./nav";

export interface ViewProps {
  /** Bumped when the API key changes: a view reloads what it shows. */
  keyVersion: number;
  /** Call on a 401: the page asks for an API key. */
  onUnauthorized: () => void;
  /** The route shown (the view and its parameters from the hash). */
  route: Route;
}
