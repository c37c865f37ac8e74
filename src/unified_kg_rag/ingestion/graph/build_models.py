"""Which models a graph build uses besides its extraction model, as its digest records them.

The ``summaries`` and ``reports`` roles (`domain.llm.roles`) may be served by other models than
extraction. Their ids enter the build's digest and the report contexts only when they differ
from the extraction model, so an index built with one model keeps its digest. Ids are read
without their endpoint, as the extraction fingerprint reads them: moving a model to another
server rebuilds nothing.
"""

from __future__ import annotations

from unified_kg_rag.ports import ChatModel

__all__ = ["bare_model_id", "models_besides_extraction"]


def bare_model_id(model_id: str) -> str:
    """Return a model id without its endpoint (``openai:gpt-4o@http://…`` → ``openai:gpt-4o``)."""
    return model_id.split("@", 1)[0]


def models_besides_extraction(
    extraction: ChatModel, summaries: ChatModel, reports: ChatModel
) -> dict[str, str]:
    """Return ``{"summaries": id, "reports": id}``, each only when it is not ``extraction``'s.

    Empty when one model serves all three roles.
    """
    own = bare_model_id(extraction.model_id)
    return {role: bare_model_id(m.model_id) for role, m in
            (("summaries", summaries), ("reports", reports))
            if bare_model_id(m.model_id) != own}  # fmt: skip
