"""What one graph build did, per stage: items, model calls, tokens, cache hits and time."""

from __future__ import annotations

from pydantic import BaseModel, Field

from unified_kg_rag.domain.extraction.grounding import ShapingCounts
from unified_kg_rag.domain.extraction.schema_conformance import ConformanceReport
from unified_kg_rag.domain.models import TokenUsage

__all__ = ["ClaimFigures", "GraphBuildReport", "StageReport", "UnitFailure"]


class StageReport(BaseModel):
    """One stage of a graph build.

    Attributes:
        items: what the stage produced or handled (units extracted, descriptions summarized,
            communities, reports ...).
        seconds: wall time of the stage, seconds (model latency included).
        embedding_s: of which waiting on the embedding model, seconds.
        usage: model usage inside the stage.
    """

    items: int = 0
    seconds: float = 0.0
    embedding_s: float = 0.0
    usage: TokenUsage = Field(default_factory=TokenUsage)


class UnitFailure(BaseModel):
    """A text unit whose extraction failed this run (retried by the next run).

    Attributes:
        text_unit_id: the text unit.
        path: its document's path.
        reason: why, in one line (an error, or the finish reason of a cut reply).
        failures: consecutive runs its extraction failed, this one included.
        quarantined: it reached ``indexing.quarantine_after`` this run: later runs skip it
            until its text changes or ``--retry-quarantined``.
    """

    text_unit_id: str
    path: str
    reason: str
    failures: int = 0
    quarantined: bool = False


class ClaimFigures(BaseModel):
    """The claim stage of a graph build (``graph.claims.enabled``).

    Attributes:
        claims: claims in the graph after the build (statements merged by id).
        units_asked: texts sent to the model this run (answered, cut or failed).
        records_reused: text units whose stored claim record was used (no model call).
        units_failed: text units whose claim call failed or was cut (asked again next run).
        units_quarantined: text units not asked: their claims failed on
            ``indexing.quarantine_after`` consecutive runs (until their text, entities or the
            claim settings change, or ``--force-rebuild``).
        dropped_subject: claim statements dropped because their subject is not one of their
            text unit's own entities.
        claims_capped: readable claims of this run's replies past
            ``graph.claims.max_per_unit``, not kept.
        records_swept: claim records no text unit of this build reads, deleted.
    """

    claims: int = 0
    units_asked: int = 0
    records_reused: int = 0
    units_failed: int = 0
    units_quarantined: int = 0
    dropped_subject: int = 0
    claims_capped: int = 0
    records_swept: int = 0


class GraphBuildReport(BaseModel):
    """The graph part of an indexing run.

    Attributes:
        methodologies: the methodologies the index holds after the run.
        skipped_reason: why no graph was built ("" when it was).
        error: why the build stopped (authentication, a server down after the retries); ""
            when it did not. Text units are kept and extraction records of finished units
            too, so the next run resumes.
        text_units: text units the graph was built from.
        records_reused: units whose stored extraction record was used (no model call).
        units_extracted: units sent to the model this run.
        units_truncated: units whose record holds a cut reply (its items before the cut are
            used; a reply cut by the provider also makes the unit fail for now).
        units_failed: units whose extraction failed (a cut reply included); the next run asks
            for them again.
        units_quarantined: units skipped because they are quarantined (failed on
            ``indexing.quarantine_after`` consecutive runs); not a failure of this run.
        records_swept: extraction records no text unit of the index reads any more (removed
            text, other settings), deleted by this build.
        shaping: what grounding and the confidence rule removed or down-weighted
            (``graph.extraction.grounding``, ``min_confidence``, ``min_strength``), summed
            over the text units (`domain.extraction.grounding.ShapingCounts`).
        entities: entities in the graph.
        relationships: relationships in the graph.
        merges: merges done by each resolution rule (``entity_key``, ``compact_name_key``,
            ``fuzzy``, ``stub_entities``, ``self_loops_dropped``).
        descriptions_summarized: descriptions over the token budget summarized by the LLM.
        summaries_failed: summaries that failed (the concatenation is kept).
        communities_per_level: number of communities at each level (0 = top).
        reports: community reports written.
        reports_failed: communities whose report failed (retried by the next run).
        items_removed: graph items of an earlier build that this build no longer has.
        claims: the claim stage's figures; None (and left out of the JSON) when claim
            extraction is off.
        schema_conformance: how the extraction conformed to the extraction schema
            (conforming, aligned, dropped, flagged per kind; the most frequent off-schema
            types); None without a schema.
        stages: per-stage figures (``extract``, ``ground`` (items: units whose record the
            rules changed), ``resolve``, ``summarize``, ``communities``,
            ``reports``, ``write``, ``pagerank`` (items: the entity graph's nodes; no time
            spent when the graph is unchanged)).
    """

    methodologies: list[str] = Field(default_factory=list)
    skipped_reason: str = ""
    error: str = ""
    text_units: int = 0
    records_reused: int = 0
    units_extracted: int = 0
    units_truncated: int = 0
    units_failed: list[UnitFailure] = Field(default_factory=list)
    units_quarantined: int = 0
    records_swept: int = 0
    shaping: ShapingCounts = Field(default_factory=ShapingCounts)
    entities: int = 0
    relationships: int = 0
    merges: dict[str, int] = Field(default_factory=dict)
    descriptions_summarized: int = 0
    summaries_failed: int = 0
    communities_per_level: dict[int, int] = Field(default_factory=dict)
    reports: int = 0
    reports_failed: int = 0
    items_removed: int = 0
    claims: ClaimFigures | None = Field(default=None, exclude_if=lambda v: v is None)
    schema_conformance: ConformanceReport | None = None
    stages: dict[str, StageReport] = Field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """True when nothing failed: the build is recorded as current.

        Otherwise the next run builds again, asking only for what failed.
        """
        return self.succeeded and not self.summaries_failed

    @property
    def succeeded(self) -> bool:
        """True when no text unit's extraction or claims, no report and not the build failed.

        A failed summary keeps its concatenated description and does not count; units
        quarantined by earlier runs and skipped do not count either. A unit whose claim call
        failed or was cut fails the build like an extraction failure (``ukr index`` exits 3).
        """
        claims_failed = self.claims is not None and self.claims.units_failed > 0
        return (
            not self.error and not self.units_failed and not self.reports_failed
            and not claims_failed
        )  # fmt: skip
