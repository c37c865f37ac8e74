"""How an index comes to hold a methodology: the steps a user takes, as one sentence.

A strategy refused for a methodology the index lacks (`MethodologyNotIndexedError`) and
``ukr strategies`` say the same thing. Building the LLM graph (`graphrag`, `lightrag`,
`hipporag`) needs an LLM at indexing time; the `lazy` concept graph needs none.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["LLM_METHODOLOGIES", "how_to_build"]

LLM_METHODOLOGIES = frozenset({"graphrag", "lightrag", "hipporag"})
"""Methodologies whose graph an LLM extracts at indexing time."""


def how_to_build(needs: Sequence[str]) -> str:
    """Return the steps that give an index one of the methodologies ``needs``.

    Args:
        needs: the methodologies, any one of which would do (a strategy's ``needs``).

    Returns:
        One sentence with concrete settings and commands; empty when ``needs`` is empty.
    """
    if not needs:
        return ""
    if "lazy" in needs:
        return ("to build the LLM-free concept graph, include `lazy` in "
                "`indexing.methodologies` (the default without an LLM) and run `ukr index "
                "PATH` again on the folder you indexed")  # fmt: skip
    wanted = needs[0]
    return (
        f"to build it, configure an LLM (`llm.kind: openai` with `llm.openai.base_url` and "
        f"`llm.openai.model` in ukr.yaml, or `UKR_LLM__KIND=openai`...), include `{wanted}` in "
        f"`indexing.methodologies` (`[graphrag, lightrag]` is the default with an LLM), then "
        f"run `ukr index PATH --estimate` for the cost and `ukr index PATH` on the folder you "
        f"indexed"
    )
