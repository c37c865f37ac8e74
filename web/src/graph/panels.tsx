/** The Graph view's side panels: one node (GET /v1/graph/nodes/{key}) and the community hierarchy. */
import { useEffect, useState } from "preact/hooks";
import { Problem } from "../problem";
import { type Loaded, useLoaded } from "../loaded";
import {
  communities as fetchCommunities,
  communityDetail,
  nodeDetail,
  type CommunityDetail,
  type CommunityHierarchy,
  type NodeDetail,
  type Scope,
} from "./client";
import { communityName, passagePreview, passageText, sourcesNote, type NodeAttributes } from "./model";

export { communityName };

export function NodePanel({
  scope,
  nodeKey,
  drawn,
  onExpand,
  onUnauthorized,
  expandNote,
}: {
  scope: Scope;
  nodeKey: string;
  drawn: NodeAttributes | null;
  onExpand: (key: string) => void;
  onUnauthorized: () => void;
  /** Why the last Expand added nothing (Max nodes reached); null otherwise. */
  expandNote?: string | null;
}) {
  const loaded = useLoaded<NodeDetail>((signal) => nodeDetail(scope, nodeKey, signal), [scope.index, scope.graph, nodeKey]);
  useEffect(() => {
    if (loaded?.state === "failed" && (loaded.error as { status?: number }).status === 401) onUnauthorized();
  }, [loaded]);
  const came = drawn ? sourcesNote(drawn) : null;
  return (
    <section class="graph-panel node-panel" aria-labelledby="node-heading">
      <h3 id="node-heading">{drawn?.label ?? (loaded?.state === "ready" ? loaded.value.label : nodeKey)}</h3>
      {came ? <p class="trace-note">{came}</p> : null}
      <button type="button" onClick={() => onExpand(nodeKey)}>
        Expand
      </button>
      {expandNote ? (
        <p class="expand-note" role="status">
          {expandNote}
        </p>
      ) : null}
      {loaded?.state === "loading" ? <p class="muted">Loading…</p> : null}
      {loaded?.state === "failed" ? <Problem error={loaded.error} context="Node" /> : null}
      {loaded?.state === "ready" ? <NodeBody node={loaded.value} /> : null}
    </section>
  );
}

function NodeBody({ node }: { node: NodeDetail }) {
  return (
    <>
      <p class="muted">
        {node.entity_type} · {node.degree} links · stated in {node.text_units_total} passages
      </p>
      {node.description ? <p class="description">{node.description}</p> : null}
      {node.links.length ? (
        <>
          <h4>Relationships ({node.links_total})</h4>
          <ul class="links-list">
            {node.links.map((l) => (
              <li>
                {l.direction === "in" ? "← " : l.direction === "out" ? "→ " : ""}
                <strong>{l.relation}</strong> {l.other_label}
                {l.description ? <span class="muted"> — {l.description}</span> : null}
              </li>
            ))}
          </ul>
        </>
      ) : null}
      {node.communities.length ? (
        <>
          <h4>Communities</h4>
          <ul>
            {node.communities.map((c) => (
              <li>
                Level {c.community.level}: {communityName(c.community)}
                <span class="muted"> ({c.community.size} members)</span>
              </li>
            ))}
          </ul>
        </>
      ) : null}
      {node.documents.length ? (
        <>
          <h4>Passages</h4>
          {node.documents.map((d) => (
            <div class="node-doc">
              <p>
                <strong>{d.path ?? d.document_id}</strong>
              </p>
              {d.units.map((u) => (
                <details class="passage">
                  <summary>{passagePreview(u.excerpt)}</summary>
                  <p class="passage-text">{passageText(u.excerpt)}</p>
                  {u.messages.length ? (
                    <ul class="messages">
                      {u.messages.map((m) => (
                        <li>
                          <strong>{m.sender_name ?? "someone"}</strong>{" "}
                          <span class="muted">
                            {m.timestamp ?? ""} {m.thread_name ? `in ${m.thread_name}` : ""}
                          </span>
                          {m.text ? <span>: {m.text}</span> : null}
                        </li>
                      ))}
                    </ul>
                  ) : null}
                </details>
              ))}
            </div>
          ))}
        </>
      ) : null}
    </>
  );
}

/** `GET /v1/graph/communities` of a scope, reloaded when the scope or the API key changes. */
export function useCommunities(scope: Scope, keyVersion: number, active: boolean): Loaded<CommunityHierarchy> | null {
  return useLoaded<CommunityHierarchy>(
    active ? (signal) => fetchCommunities(scope, signal) : null,
    [scope.index, scope.graph, keyVersion, active],
  );
}

export function CommunityBrowser({
  scope,
  tree,
  onFocus,
  onUnauthorized,
}: {
  scope: Scope;
  tree: Loaded<CommunityHierarchy> | null;
  onFocus: (id: string) => void;
  onUnauthorized: () => void;
}) {
  const [chosen, setChosen] = useState<string | null>(null);
  const detail = useLoaded<CommunityDetail>(
    chosen ? (signal) => communityDetail(scope, chosen, signal) : null,
    [scope.index, scope.graph, chosen],
  );
  useEffect(() => setChosen(null), [scope.index, scope.graph]);
  useEffect(() => {
    if (tree?.state === "failed" && (tree.error as { status?: number }).status === 401) onUnauthorized();
  }, [tree]);
  return (
    <section class="graph-panel communities" aria-labelledby="communities-heading">
      <h3 id="communities-heading">Communities</h3>
      {tree?.state === "loading" ? <p class="muted">Loading…</p> : null}
      {tree?.state === "failed" ? <Problem error={tree.error} context="Communities" /> : null}
      {tree?.state === "ready" && tree.value.total === 0 ? <p class="muted">This graph has no communities.</p> : null}
      {tree?.state === "ready"
        ? tree.value.levels.map((lv) => (
            <details open={lv.level === 0}>
              <summary>
                Level {lv.level} ({lv.communities.length})
              </summary>
              <ul class="community-list">
                {lv.communities.slice(0, 100).map((c) => (
                  <li>
                    <button type="button" class="link" aria-pressed={chosen === c.id} onClick={() => setChosen(c.id)}>
                      {communityName(c)}
                    </button>{" "}
                    <span class="muted">{c.size} members</span>
                  </li>
                ))}
              </ul>
              {lv.communities.length > 100 ? <p class="muted">{lv.communities.length - 100} more.</p> : null}
            </details>
          ))
        : null}
      {detail?.state === "failed" ? <Problem error={detail.error} context="Community" /> : null}
      {detail?.state === "ready" ? (
        <div class="community-detail" aria-live="polite">
          <h4>{communityName(detail.value.community)}</h4>
          <p class="muted">
            Level {detail.value.community.level} · {detail.value.community.size} members
            {typeof detail.value.community.rating === "number" ? ` · rated ${detail.value.community.rating}/10` : ""}
          </p>
          <button type="button" onClick={() => onFocus(detail.value.community.id)}>
            Focus
          </button>
          {detail.value.summary ? <p>{detail.value.summary}</p> : null}
          {detail.value.findings.length ? (
            <ul>
              {detail.value.findings.map((f) => (
                <li>{f}</li>
              ))}
            </ul>
          ) : null}
          <p>Members: {detail.value.members.map((m) => m.label).join(", ")}</p>
        </div>
      ) : null}
    </section>
  );
}
