"""Reading the JSON object of a model reply that may wrap it in prose, fences or reasoning."""

from __future__ import annotations

import json

__all__ = ["parse_json_object"]

_DECODER = json.JSONDecoder()
_MAX_STARTS = 64
"""Most ``{`` positions tried (a reply of prose full of braces cannot cost quadratic time)."""


def parse_json_object(reply: str) -> dict[str, object] | None:
    """Return the first JSON object in a model reply (fences and prose around it tolerated).

    Each ``{`` is tried in turn (at most 64) with a single decoder pass, so the cost is linear
    in the reply's length. Returns None when no object can be decoded.
    """
    start = reply.find("{")
    tries = 0
    while start != -1 and tries < _MAX_STARTS:
        tries += 1
        try:
            value, _ = _DECODER.raw_decode(reply, start)
        except json.JSONDecodeError:
            start = reply.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return value
        start = reply.find("{", start + 1)
    return None
