/** Errors shown to people: what went wrong and what to do, by kind of failure. */
import { ApiError, UnreachableError } from "./api";

export function isUnauthorized(error: unknown): boolean {
  return error instanceof ApiError && error.status === 401;
}

/** An error handler that calls `onUnauthorized` for a 401 (the page asks for a key). */
export function unauthorizedTo(onUnauthorized: () => void): (error: unknown) => void {
  return (error) => {
    if (isUnauthorized(error)) onUnauthorized();
  };
}

export function Problem({ error, context }: { error: unknown; context: string }) {
  let title: string;
  let detail: string;
  if (error instanceof UnreachableError) {
    title = "The server cannot be reached";
    detail = `${error.message}. Is \`ukr serve\` still running? Reload the page once it is.`;
  } else if (error instanceof ApiError) {
    detail = error.field ? `${error.message} (field: ${error.field})` : error.message;
    if (error.status === 401) title = "An API key is needed";
    else if (error.status === 403) title = "This API key may not do that";
    else if (error.status === 409) title = "The index cannot do that now";
    else if (error.status === 422 || error.status === 400) title = "The request was refused";
    else if (error.status === 429) title = "Too many requests: try again shortly";
    else title = `The server answered ${error.status}`;
    detail = `${error.type}: ${detail}`;
  } else {
    title = "Something went wrong";
    detail = error instanceof Error ? error.message : String(error);
  }
  return (
    <div class="problem" role="alert">
      <strong>
        {context}: {title}
      </strong>
      <p>{detail}</p>
    </div>
  );
}
