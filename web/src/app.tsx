/** The page: a header, the views' tab bar (Ask, Corpus, Graph), the view the hash names. */
import { useEffect, useState } from "preact/hooks";
import { apiKey, serverVersion, setApiKey } from "./api";
import { Ask } from "./ask";
import { Corpus } from "./corpus/corpus";
import { GraphView } from "./graph/graph";
import { KeyForm } from "./keyform";
import { routeHash, useRoute, type View } from "./nav";

const TABS: { view: View; label: string }[] = [
  { view: "ask", label: "Ask" },
  { view: "corpus", label: "Corpus" },
  { view: "graph", label: "Graph" },
];

export function App() {
  const [keyVersion, setKeyVersion] = useState(0);
  const [needKey, setNeedKey] = useState(false);
  const [version, setVersion] = useState("");
  const route = useRoute();

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
  const props = { keyVersion, onUnauthorized: () => setNeedKey(true), route };

  return (
    <>
      <header class="top">
        <h1>
          unified-kg-rag{version ? <span class="muted"> {version}</span> : null}
        </h1>
        <nav aria-label="Views" class="tabs">
          {TABS.map(({ view, label }) => (
            <a href={routeHash(view)} class="tab" aria-current={route.view === view ? "page" : undefined}>
              {label}
            </a>
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
      <main id={route.view}>
        {needKey ? <KeyForm onSaved={keySaved} rejected={keyVersion > 0} /> : null}
        {route.view === "ask" ? <Ask {...props} /> : null}
        {route.view === "corpus" ? <Corpus {...props} /> : null}
        {route.view === "graph" ? <GraphView {...props} /> : null}
      </main>
    </>
  );
}
