/** The page: a header, the views' tab bar (Ask now; Corpus and Graph come next), the view. */
import { useEffect, useState } from "preact/hooks";
import { apiKey, serverVersion, setApiKey } from "./api";
import { Ask } from "./ask";
import { KeyForm } from "./keyform";

const COMING = ["Corpus", "Graph"];

export function App() {
  const [keyVersion, setKeyVersion] = useState(0);
  const [needKey, setNeedKey] = useState(false);
  const [version, setVersion] = useState("");

  useEffect(() => {
    serverVersion().then(setVersion, () => setVersion(""));
  }, []);

  const keySaved = () => {
    setNeedKey(false);
    setKeyVersion((v) => v + 1);
  };
  const forgetKey = () => {
    setApiKey(null);
    setKeyVersion((v) => v + 1);
  };

  return (
    <>
      <header class="top">
        <h1>
          unified-kg-rag{version ? <span class="muted"> {version}</span> : null}
        </h1>
        <nav aria-label="Views" class="tabs">
          <a href="#ask" class="tab" aria-current="page">
            Ask
          </a>
          {COMING.map((name) => (
            <span class="tab coming" aria-disabled="true" title="coming next">
              {name} <small>(coming next)</small>
            </span>
          ))}
        </nav>
        <div class="links">
          <a href="/docs">HTTP API</a>
          {apiKey() ? (
            <button type="button" class="link" onClick={forgetKey}>
              Forget API key
            </button>
          ) : null}
        </div>
      </header>
      <main id="ask">
        {needKey ? <KeyForm onSaved={keySaved} rejected={keyVersion > 0} /> : null}
        <Ask keyVersion={keyVersion} onUnauthorized={() => setNeedKey(true)} />
      </main>
    </>
  );
}
