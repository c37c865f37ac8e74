"""Reading the JSON object of a model reply that may wrap it in prose, fences or reasoning.

The object comes back as valid Unicode: a reply may hold the JSON escape of a lone UTF-16
surrogate (U+D800 alone), which ``json`` decodes into a string no UTF-8 writer accepts; every
string of the object (keys included) has such halves replaced by U+FFFD (`repair_json_strings`).
"""

from __future__ import annotations

import json

from unified_kg_rag.domain.text.analysis import repair_unicode

__all__ = ["parse_json_object", "repair_json_strings"]

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
        except (json.JSONDecodeError, RecursionError):  # nested too deep for the decoder
            start = reply.find("{", start + 1)
            continue
        if isinstance(value, dict):
            return {repair_unicode(str(k)): repair_json_strings(v) for k, v in value.items()}
        start = reply.find("{", start + 1)
    return None


def repair_json_strings(value: object) -> object:
    """Return a decoded JSON value with every string (and key) repaired to valid Unicode.

    Lists and objects are rebuilt only along the way to a string that changed; nesting is
    bounded by what ``json`` could decode.
    """
    if isinstance(value, str):
        return repair_unicode(value)
    if isinstance(value, list):
        return [repair_json_strings(v) for v in value]
    if isinstance(value, dict):
        return {repair_unicode(k): repair_json_strings(v) for k, v in value.items()}
    return value
