/** The graph routes of the HTTP API (`/v1/graph/…`, service/graph.py) and their shapes. */
import { getJson, sendJson } from "../api";
import type { RAGOutput } from "../types";
import { traceRequest, type GraphKind, type SerializedGraph } from "./model";

export interface LabelMatch {
  id: string;
  label: string;
  entity_type: string;
  degree: number;
  match?: "exact" | "prefix" | "word" | null;
}

export interface LabelSearch {
  index: string;
  graph: GraphKind;
  query: string;
  matches: LabelMatch[];
}

export interface CommunityInfo {
  id: string;
  level: number;
  size: number;
  parent_id?: string | null;
  children_ids: string[];
  title?: string | null;
  rating?: number | null;
  /** The labels of its (at most 3) best connected members. */
  top_members?: string[];
}

export interface CommunityHierarchy {
  index: string;
  graph: GraphKind;
  total: number;
  levels: { level: number; communities: CommunityInfo[] }[];
}

export interface CommunityDetail {
  index: string;
  graph: GraphKind;
  community: CommunityInfo;
  summary?: string | null;
  findings: string[];
  full_content: string;
  members: LabelMatch[];
}

export interface MessageRef {
  sender_name?: string | null;
  timestamp?: string | null;
  thread_name?: string | null;
  text?: string;
  [name: string]: unknown;
}

export interface NodeDetail {
  index: string;
  graph: GraphKind;
  id: string;
  label: string;
  entity_type: string;
  description: string;
  degree: number;
  links: {
    id: string;
    direction: "out" | "in" | "both";
    other_id: string;
    other_label: string;
    relation: string;
    description: string;
    weight: number;
  }[];
  links_total: number;
  communities: { community: CommunityInfo; summary?: string | null }[];
  documents: {
    document_id: string;
    path?: string | null;
    units: { id: string; excerpt: string; start_char?: number | null; end_char?: number | null; messages: MessageRef[] }[];
  }[];
  text_units_total: number;
}

/** Where a request reads: an index (null: the server's default) and a graph (null: its default). */
export interface Scope {
  index: string | null;
  graph: GraphKind | null;
}

const scoped = (scope: Scope) => ({ index: scope.index ?? undefined, graph: scope.graph ?? undefined });

export function searchLabels(scope: Scope, q: string, signal?: AbortSignal): Promise<LabelSearch> {
  return getJson<LabelSearch>("/v1/graph/labels", { ...scoped(scope), q, limit: 12 }, signal);
}

export function labelSlice(
  scope: Scope,
  label: string,
  maxDepth: number,
  maxNodes: number,
  signal?: AbortSignal,
): Promise<SerializedGraph> {
  return getJson<SerializedGraph>(
    "/v1/graph/slice",
    { ...scoped(scope), label, max_depth: maxDepth, max_nodes: maxNodes },
    signal,
  );
}

export function communitySlice(scope: Scope, community: string, maxNodes: number, signal?: AbortSignal): Promise<SerializedGraph> {
  return getJson<SerializedGraph>("/v1/graph/slice", { ...scoped(scope), community, max_nodes: maxNodes }, signal);
}

export function nodeDetail(scope: Scope, key: string, signal?: AbortSignal): Promise<NodeDetail> {
  return getJson<NodeDetail>(`/v1/graph/nodes/${encodeURIComponent(key)}`, scoped(scope), signal);
}

export function communities(scope: Scope, signal?: AbortSignal): Promise<CommunityHierarchy> {
  return getJson<CommunityHierarchy>("/v1/graph/communities", scoped(scope), signal);
}

export function communityDetail(scope: Scope, id: string, signal?: AbortSignal): Promise<CommunityDetail> {
  return getJson<CommunityDetail>(`/v1/graph/communities/${encodeURIComponent(id)}`, scoped(scope), signal);
}

/** `POST /v1/graph/trace`: the answer's context drawn inside its neighbourhood. */
export function queryTrace(output: RAGOutput, graph: GraphKind | null, maxNodes: number, signal?: AbortSignal): Promise<SerializedGraph> {
  return sendJson<SerializedGraph>("POST", "/v1/graph/trace", traceRequest(output, graph, maxNodes), signal);
}
