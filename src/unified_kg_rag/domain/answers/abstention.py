"""The decline marker: an answer starting with ``[NO_ANSWER]`` abstains (seed 000 §9.2).

Detection reads the first characters after NFKC normalization, so full-width brackets and
leading Markdown emphasis are accepted; the marker itself is ASCII in every language.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["ABSTENTION_INSTRUCTIONS", "MARKER_WINDOW", "NO_ANSWER", "detect_abstention"]

NO_ANSWER = "[NO_ANSWER]"
MARKER_WINDOW = 32
"""Characters a streamed answer holds back until the marker is ruled in or out."""

ABSTENTION_INSTRUCTIONS = (
    "\n\nIf the sources do not support an answer to the question, start your reply with the "
    f"exact token {NO_ANSWER}, then write one sentence, in the language of the question, "
    "saying what is missing. Otherwise do not write that token."
)

_LEAD = re.compile(r"^[\s*_>#`]*")


def detect_abstention(answer: str) -> tuple[bool, str]:
    """Return ``(abstained, answer without the marker)``.

    The marker counts only at the start (after whitespace and Markdown emphasis); the text
    after it is returned stripped. An answer without it is returned unchanged.
    """
    head = unicodedata.normalize("NFKC", answer[: MARKER_WINDOW * 2])
    lead = _LEAD.match(head)
    start = lead.end() if lead else 0
    if not head[start:].upper().startswith(NO_ANSWER):
        return False, answer
    # map the normalized prefix back to the original: NFKC keeps bracket count and letters
    consumed = 0
    seen = 0
    target = start + len(NO_ANSWER)
    for ch in answer:
        seen += len(unicodedata.normalize("NFKC", ch))
        consumed += 1
        if seen >= target:
            break
    rest = answer[consumed:].lstrip(" *_:-—`\n\t")
    return True, rest.strip()
