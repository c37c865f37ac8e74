"""`SummaryNode` and `SummaryTree`: what the `raptor` methodology stores (seed 000 §6.5).

Text units are the tree's leaves (level 0) and are not copied; a summary node at level
``L >= 1`` summarises its children (text units or summaries of lower levels) and carries its
lineage, the sorted ids of every text unit under it. The whole tree of one build is stored as
one JSON document in the index's `RecordStore` (namespace ``raptor``, key ``tree``); each
node's text and vector also go to the ``summary_nodes`` search collection, so the `tree`
strategy searches every level at once (RAPTOR's collapsed tree).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from unified_kg_rag.util.errors import StoreSchemaError
from unified_kg_rag.util.hashing import sha256_text

__all__ = ["TREE_FORMAT_VERSION", "SummaryNode", "SummaryTree", "summary_node_id"]

TREE_FORMAT_VERSION = 1
"""Version of the stored `SummaryTree` JSON; a reader refuses another."""


def summary_node_id(level: int, child_ids: Iterable[str]) -> str:
    """Return a summary node's content id: SHA-256 of its level and sorted child ids.

    Ids depend on structure only, so an unchanged cluster keeps its id across builds.
    """
    return sha256_text("summary_node", str(level), *sorted(child_ids))


class SummaryNode(BaseModel):
    """One summary of the tree.

    Attributes:
        id: `summary_node_id` of ``level`` and ``child_ids``.
        level: 1 for summaries of text units, ``L + 1`` for summaries of level-``L`` nodes.
        text: the summary (an LLM's, or sentences of the children when ``extractive``).
        child_ids: the summarised children, sorted (text-unit ids at level 1; at higher
            levels summary ids, and text-unit ids of leaves promoted unsummarised).
        text_unit_ids: the transitive leaves (the lineage), sorted.
        n_tokens: tokens of ``text`` (the index's token counter).
        input_key: digest of the children's ids and texts and the summary settings; a later
            build whose cluster has the same key reuses ``text`` without a model call.
        extractive: written without an LLM (sentences nearest the cluster centroid).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    level: int = Field(ge=1)
    text: str
    child_ids: tuple[str, ...]
    text_unit_ids: tuple[str, ...]
    n_tokens: int = Field(default=0, ge=0)
    input_key: str = ""
    extractive: bool = False

    @property
    def n_leaves(self) -> int:
        """Number of text units under the node."""
        return len(self.text_unit_ids)


class SummaryTree(BaseModel):
    """Every summary node of one build of an index's tree.

    Attributes:
        nodes: the summary nodes, by level then id.
        leaf_digest: SHA-256 of the sorted leaf (text-unit) ids the tree was built from.
        fingerprint: SHA-256 of the settings that shape the tree (clustering, summary mode
            and model, prompt, embedding model); a build with another fingerprint rebuilds.
        partial: some summaries failed; the next build retries them (reusing the rest).
        levels: number of summary levels (0 for a tree with no summary).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    nodes: tuple[SummaryNode, ...] = ()
    leaf_digest: str = ""
    fingerprint: str = ""
    partial: bool = False

    @property
    def levels(self) -> int:
        """Number of summary levels."""
        return max((n.level for n in self.nodes), default=0)

    def by_id(self) -> dict[str, SummaryNode]:
        """Return the nodes keyed by id."""
        return {n.id: n for n in self.nodes}

    def citing(self, text_unit_ids: Sequence[str]) -> list[SummaryNode]:
        """Return the nodes whose lineage holds any of ``text_unit_ids`` (by level, id)."""
        wanted = set(text_unit_ids)
        return [n for n in self.nodes if wanted.intersection(n.text_unit_ids)]

    def encode(self) -> str:
        """Return the record-store text of the tree (versioned JSON)."""
        body = self.model_dump(mode="json")
        return json.dumps({"version": TREE_FORMAT_VERSION, **body}, ensure_ascii=False)

    @classmethod
    def decode(cls, text: str) -> SummaryTree:
        """Return the tree stored by `encode`.

        Raises:
            StoreSchemaError: the text is not a summary tree of a known version.
        """
        try:
            raw = json.loads(text)
        except ValueError as exc:
            raise StoreSchemaError(f"stored summary tree is not JSON: {exc}") from exc
        if not isinstance(raw, dict) or raw.pop("version", None) != TREE_FORMAT_VERSION:
            raise StoreSchemaError(
                f"stored summary tree is not of format version {TREE_FORMAT_VERSION}; "
                "run `ukr index PATH --reset` to rebuild it"
            )
        try:
            return cls.model_validate(raw)
        except ValueError as exc:
            raise StoreSchemaError(f"stored summary tree is malformed: {exc}") from exc
