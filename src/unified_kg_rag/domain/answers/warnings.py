"""What a reader must be told about an answer, one line each: cut replies, bogus citations.

The chain puts the facts in `RAGOutput.metadata` (``answer_complete``, ``finish_reason``,
``incomplete_replies``, ``invalid_citations``, ``deadline_hit``); `answer_warnings` words
them for people, so the CLI and the service say the same thing. An answer with nothing to
flag has no warning.
"""

from __future__ import annotations

from collections.abc import Mapping

from unified_kg_rag.domain.llm.finish import describe_finish
from unified_kg_rag.domain.models import RAGOutput

__all__ = ["answer_warnings"]

_ADVICE = {
    "length": "raise query.answer_max_tokens (the longest answer, in tokens) or ask a "
    "narrower question",
    "content_filter": "the provider's content filter stopped the reply; rephrase the "
    "question or check the provider's filter settings",
    "deadline": "raise query.deadline_s (the whole query) or the provider's deadline_s "
    "(one model call)",
}
_NO_ADVICE = "the model did not say it finished its reply"


def answer_warnings(output: RAGOutput) -> list[str]:
    """Return one line per thing to flag about ``output``, most important first.

    - the answer was cut (``answer_complete`` false): how, and what to change;
    - intermediate replies the answer rests on were cut (``incomplete_replies``);
    - the query's deadline passed (``deadline_hit``): what the answer was built from;
    - the answer cites labels that name no source (``invalid_citations``).
    """
    meta = output.metadata
    lines: list[str] = []
    if meta.get("answer_complete") is False:
        reason = meta.get("finish_reason")
        reason = reason if isinstance(reason, str) else None
        lines.append(
            f"the answer is incomplete: {describe_finish(reason)}; "
            f"{_ADVICE.get(reason or '', _NO_ADVICE)}"
        )
    cut = meta.get("incomplete_replies")
    if isinstance(cut, Mapping) and cut:
        steps = ", ".join(f"{step} ({reason})" for step, reason in cut.items())
        lines.append(
            f"{len(cut)} intermediate model repl{'y' if len(cut) == 1 else 'ies'} the answer "
            f"rests on {'was' if len(cut) == 1 else 'were'} cut: {steps}"
        )
    if meta.get("deadline_hit") is True:
        lines.append(_deadline_line(meta))
    invalid = meta.get("invalid_citations")
    if isinstance(invalid, list | tuple) and invalid:
        lines.append(f"the answer cites sources that do not exist: {', '.join(invalid)}")
    return lines


def _deadline_line(meta: Mapping[str, object]) -> str:
    seconds = meta.get("deadline_s")
    limit = f" (query.deadline_s = {seconds:g} s)" if isinstance(seconds, int | float) else ""
    line = f"the query's deadline passed{limit}: the strategy answered from what it had"
    fallback = meta.get("answer_fallback")
    if isinstance(fallback, str) and fallback:
        line += f"; {fallback}"
    return line
