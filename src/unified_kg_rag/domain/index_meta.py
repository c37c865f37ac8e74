"""Where an index records facts about itself in its `RecordStore`.

``INDEX_NAMESPACE`` / ``METHODOLOGIES_KEY`` hold a JSON list of the methodologies whose
artefacts the index holds; strategies that need one are refused on an index without it.
"""

from __future__ import annotations

import json

__all__ = ["INDEX_NAMESPACE", "METHODOLOGIES_KEY", "parse_methodologies"]

INDEX_NAMESPACE = "index"
METHODOLOGIES_KEY = "methodologies"


def parse_methodologies(raw: str | None) -> tuple[str, ...]:
    """Return the methodologies recorded in ``raw`` (a JSON list), or ``()`` when unset."""
    if not raw:
        return ()
    value = json.loads(raw)
    return tuple(str(v) for v in value) if isinstance(value, list) else ()
