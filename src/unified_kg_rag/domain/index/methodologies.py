"""The methodologies an index can be built for, as registered profiles (seed 000 §4.6).

A `MethodologyProfile` says what a methodology builds (its artifacts), whether building it
needs an LLM, which derived stage builds it, and how it comes back after documents are
removed. Adding a methodology is one `register_methodology` call here (or in a plugin) plus
the ingestion stage module that builds it (`ingestion.stages`); the strategies that serve it
name it when they register (`retrieval.strategies.register_strategy`). Config validation,
the stages a run executes, the methodologies an index records, the refusal of a strategy
the index cannot serve, and ``ukr strategies`` all read these profiles.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "METHODOLOGIES",
    "MethodologyProfile",
    "builds_artifact",
    "how_to_build",
    "methodology_names",
    "needs_llm",
    "register_methodology",
]

Artifact = Literal[
    "entity_graph", "relationship_vectors", "community_reports", "concept_graph",
    "summary_tree",
]
"""What a derived stage stores beside the text units every index holds."""


@dataclass(frozen=True)
class MethodologyProfile:
    """One methodology an index can hold.

    Attributes:
        name: the name in ``indexing.methodologies`` and in an index's record.
        builds: one line: what it builds (help texts, ``ukr strategies``).
        stage: the derived stage that builds it (``graph``, ``concepts``, ``summary_tree``).
        artifacts: what it stores beside the text units.
        llm: ``required``: built only with an LLM (`needs_llm`); ``optional``: an LLM
            improves it but it builds without one; ``none``: never calls one.
        after_deletion: how it comes back after documents are removed, for help texts:
            ``rebuild`` (derived again from the surviving text units and stored extraction
            records; an LLM graph needs the LLM configured).
    """

    name: str
    builds: str
    stage: str
    artifacts: tuple[Artifact, ...]
    llm: Literal["required", "optional", "none"]
    after_deletion: str = "rebuild"


METHODOLOGIES: dict[str, MethodologyProfile] = {}
"""Registered methodologies by name (registration order)."""


def register_methodology(profile: MethodologyProfile) -> MethodologyProfile:
    """Register ``profile`` (a later registration of the same name replaces it)."""
    METHODOLOGIES[profile.name] = profile
    return profile


def methodology_names() -> tuple[str, ...]:
    """Return the registered methodology names, in registration order."""
    return tuple(METHODOLOGIES)


def needs_llm(methodologies: Iterable[str]) -> bool:
    """True when any of ``methodologies`` is built only with an LLM."""
    return any(
        (p := METHODOLOGIES.get(m)) is not None and p.llm == "required" for m in methodologies
    )


def builds_artifact(methodologies: Iterable[str], artifact: Artifact) -> bool:
    """True when any of ``methodologies`` builds ``artifact``."""
    return any(
        (p := METHODOLOGIES.get(m)) is not None and artifact in p.artifacts
        for m in methodologies
    )


def how_to_build(needs: Sequence[str]) -> str:
    """Return the steps that give an index one of the methodologies ``needs``.

    Args:
        needs: the methodologies, any one of which would do (a strategy's ``needs``).

    Returns:
        One sentence with concrete settings and commands; empty when ``needs`` is empty.
    """
    if not needs:
        return ""
    profiles = [METHODOLOGIES[m] for m in needs if m in METHODOLOGIES]
    offline = next((p for p in profiles if p.llm != "required"), None)
    if offline is not None:
        default = " (the default without an LLM)" if offline.name == "lazy" else ""
        llm = ("; an LLM (`llm.kind`) writes better summaries"
               if offline.llm == "optional" else "")  # fmt: skip
        return (f"to build {offline.builds} without an LLM, include `{offline.name}` in "
                f"`indexing.methodologies`{default} and run `ukr index PATH` again on the "
                f"folder you indexed{llm}")  # fmt: skip
    wanted = needs[0]
    return (
        f"to build it, configure an LLM (`llm.kind: openai` with `llm.openai.base_url` and "
        f"`llm.openai.model` in ukr.yaml, or `UKR_LLM__KIND=openai`...), include `{wanted}` in "
        f"`indexing.methodologies` (`[graphrag, lightrag]` is the default with an LLM), then "
        f"run `ukr index PATH --estimate` for the cost and `ukr index PATH` on the folder you "
        f"indexed"
    )


register_methodology(MethodologyProfile(
    "graphrag", "the LLM knowledge graph with Leiden communities and community reports",
    stage="graph", artifacts=("entity_graph", "community_reports"), llm="required",
))  # fmt: skip
register_methodology(MethodologyProfile(
    "lightrag", "the LLM knowledge graph with relationship vectors",
    stage="graph", artifacts=("entity_graph", "relationship_vectors"), llm="required",
))  # fmt: skip
register_methodology(MethodologyProfile(
    "hipporag", "the LLM knowledge graph with relationship vectors (what lightrag builds)",
    stage="graph", artifacts=("entity_graph", "relationship_vectors"), llm="required",
))  # fmt: skip
register_methodology(MethodologyProfile(
    "lazy", "the LLM-free concept graph",
    stage="concepts", artifacts=("concept_graph",), llm="none",
))  # fmt: skip
register_methodology(MethodologyProfile(
    "raptor", "the RAPTOR summary tree",
    stage="summary_tree", artifacts=("summary_tree",), llm="optional",
))  # fmt: skip
