/** Asks for the API key after a 401; the key is kept in sessionStorage only (this tab). */
import { useState } from "preact/hooks";
import { apiKey, isSendableKey, setApiKey } from "./api";

/** `rejected` is kept for the callers; a key kept in the tab that met a 401 was refused. */
export function KeyForm({ onSaved }: { onSaved: () => void; rejected?: boolean }) {
  const [key, setKey] = useState("");
  const [invalid, setInvalid] = useState(false);
  const submit = (event: Event) => {
    event.preventDefault();
    const trimmed = key.trim();
    if (trimmed && !isSendableKey(trimmed)) {
      setInvalid(true); // fetch could not send it in a header: say so, keep nothing
      return;
    }
    setApiKey(trimmed || null);
    onSaved();
  };
  return (
    <form class="key-form" onSubmit={submit} aria-labelledby="key-heading">
      <h2 id="key-heading">API key</h2>
      <p>
        {apiKey() ? "The server refused this key. " : "This server requires an API key. "}
        It is kept for this browser tab only (sessionStorage) and sent as{" "}
        <code>Authorization: Bearer …</code>.
      </p>
      <p class="muted">
        Get a key from the server's operator, or make one on the server with <code>ukr keys add NAME --scope read</code>{" "}
        (<code>write</code> to upload, delete or retry documents, <code>admin</code> to reset an index).
      </p>
      <label for="api-key">Key</label>
      <input
        id="api-key"
        type="password"
        autocomplete="off"
        value={key}
        onInput={(e) => {
          setKey(e.currentTarget.value);
          setInvalid(false);
        }}
        required
      />
      {invalid ? (
        <p class="problem" role="alert">
          This key holds characters a key cannot have (a space or an invisible character copied with it?): keys are
          printable ASCII.
        </p>
      ) : null}
      <button type="submit">Use this key</button>
    </form>
  );
}
